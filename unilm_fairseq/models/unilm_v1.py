"""UniLM v1's architectures of the ``unilmv2`` model (``unilm_v1_base``, ``unilm_v1_large``).

UniLM v1 shares UniLMv2's network; its presets differ in the segment table (six rows, one per LM
identifier) and in having no relative position bias. Each fills only unset fields.
"""

from fairseq.models import register_model_architecture

from .architecture_presets import fill_unset
from .unilmv2 import LARGE, base_architecture


def unilm_v1_architecture(args):
    """UniLM v1: no relative position bias, 6 segment ids (LM identifiers, see
    :mod:`unilm_fairseq.data.pretraining.unilm_objectives`); fills only unset fields."""
    fill_unset(args, {"num_segments": 6, "rel_pos_bins": 0})
    base_architecture(args)


@register_model_architecture("unilmv2", "unilm_v1_base")
def unilm_v1_base(args):
    unilm_v1_architecture(args)


@register_model_architecture("unilmv2", "unilm_v1_large")
def unilm_v1_large(args):
    """The paper's model: BERT-large sizes (24 layers, 1024 hidden, 16 heads)."""
    fill_unset(args, LARGE)
    unilm_v1_architecture(args)
