"""TableRAG: million-cell tables through query expansion, schema and cell retrieval under an
encoding budget, and a sandboxed ReAct pandas solver (arXiv:2410.04739)."""

from tablequest.methods.base import MethodContext
from tablequest.methods.options import OptionError
from tablequest.methods.rag.config import BASELINES, Baseline, RagConfig
from tablequest.methods.rag.method import TableRAG, embedding_cache_path
from tablequest.methods.rag.prepared import PreparedTable, Retrieval

__all__ = [
    "BASELINES",
    "Baseline",
    "PreparedTable",
    "RagConfig",
    "Retrieval",
    "TableRAG",
    "embedding_cache_path",
    "register",
]


def _build(options: RagConfig, context: MethodContext) -> TableRAG:
    embeddings = context.encoder_settings(options.embed_url, options.embed_model)
    if options.encoder == "api" and not (embeddings.url and embeddings.model):
        raise OptionError(
            "encoder api needs -o embed_model NAME and an embeddings URL (-o embed_url URL "
            "or --llm-url)"
        )
    return TableRAG(options, context)


def register() -> None:
    """Register ``rag`` (a built-in, through the same call a plugin makes)."""
    from tablequest.methods.registry import register_method

    register_method(
        "rag",
        _build,
        RagConfig,
        input="table",
        description="TableRAG: one big table; query expansion, schema/cell retrieval, ReAct solver",
        title="TableRAG",
        paper=(
            "TableRAG: Million-Token Table Understanding with Language Models "
            "(Chen et al., NeurIPS 2024), arXiv:2410.04739"
        ),
    )
