"""UniLM v1's architectures of the ``unilmv2`` model (``unilm_v1_base``, ``unilm_v1_large``).

UniLM v1 shares UniLMv2's network; its presets differ in the segment table (six rows, one per LM
identifier) and in having no relative position bias. Each fills only unset fields.
"""

from fairseq.models import register_model_architecture
from fairseq.utils import safe_getattr

from .unilmv2 import base_architecture


def unilm_v1_architecture(args):
    """UniLM v1: no relative position bias, 6 segment ids (LM identifiers, see
    :mod:`unilm_fairseq.data.pretraining.unilm_objectives`); fills only unset fields."""
    args.num_segments = safe_getattr(args, "num_segments", 6)
    args.rel_pos_bins = safe_getattr(args, "rel_pos_bins", 0)
    base_architecture(args)


@register_model_architecture("unilmv2", "unilm_v1_base")
def unilm_v1_base(args):
    unilm_v1_architecture(args)


@register_model_architecture("unilmv2", "unilm_v1_large")
def unilm_v1_large(args):
    """The paper's model: BERT-large sizes (24 layers, 1024 hidden, 16 heads)."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 24)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 1024)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 4096)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 16)
    unilm_v1_architecture(args)
