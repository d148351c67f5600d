"""Text encoders registered with fairseq's ``--bpe`` registry (imported by the package ``__init__``)."""

from . import wordpiece  # noqa: F401  (registers --bpe wordpiece)
