"""Exit statuses shared by every command (docs/usage.md, "Exit statuses"; README in short).

- 0 ``OK``: the command did what was asked (``ask``: it answered).
- 1 ``FAILED``: the run could not complete, or ``ask`` failed (the model was unreachable, a
  method error, the deadline passed); one line names what failed and where.
- 2 ``USAGE``: bad input (an unknown option or method, an empty question, a missing store).
- 3 ``INSUFFICIENT``: ``ask`` ran but the evidence was insufficient to answer.
- 4 ``NO_MODEL``: ``ask`` needs a model and none is configured (the LLM-free part ran).
- 5 ``NOT_VERIFIED``: ``ask --require-verified`` answered, but the answer is not ``verified``
  against its evidence (``unverified`` or ``contradicted``; `Result.verified`).
- 130 / 143: stopped by SIGINT / SIGTERM.
"""

from __future__ import annotations

OK = 0
FAILED = 1
USAGE = 2
INSUFFICIENT = 3
NO_MODEL = 4
NOT_VERIFIED = 5
SIGINT = 130
SIGTERM = 143
