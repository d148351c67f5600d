"""Export ``unilmv2`` checkpoints to Hugging Face layouts: the inverse of :mod:`unilm_fairseq.hf_import`.

:func:`export_checkpoint` writes ``config.json``, the weights and ``vocab.txt`` (token ids unchanged) as a
``transformers`` BERT model (``bert``), UniLM's fused "fast QKV" release layout (``unilm``) or the layout
s2s-ft's decoding reads (``s2s-ft``). ``scripts/export_hf_checkpoint.py`` is its command line.
"""

from .export import ExportResult, export_checkpoint
from .layouts import LAYOUTS, ExportError

__all__ = ["LAYOUTS", "ExportError", "ExportResult", "export_checkpoint"]
