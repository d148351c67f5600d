"""Import Hugging Face checkpoints (BERT, MiniLM, UniLM fast-QKV, ELECTRA, RoBERTa, XLM-R) as ``unilmv2``.

:func:`convert_hf_checkpoint` reads a model directory and writes ``model.pt``
(a fairseq checkpoint) and ``dict.txt`` that keeps the source model's token ids.
``scripts/convert_hf_checkpoint.py`` is its command line.
"""

from .config import FORMATS, ConversionError
from .convert import convert_hf_checkpoint

__all__ = ["FORMATS", "ConversionError", "convert_hf_checkpoint"]
