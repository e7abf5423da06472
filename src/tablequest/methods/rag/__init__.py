"""TableRAG: million-cell tables through query expansion, schema and cell retrieval under an
encoding budget, and a sandboxed ReAct pandas solver (papers/tablerag.txt; SEEDS.md §2)."""

from tablequest.methods.rag.config import BASELINES, Baseline, RagConfig
from tablequest.methods.rag.method import TableRAG
from tablequest.methods.rag.prepared import PreparedTable, Retrieval

__all__ = ["BASELINES", "Baseline", "PreparedTable", "RagConfig", "Retrieval", "TableRAG"]
