from .attention import BiasedSelfAttention, build_attention_bias
from .relative_position import RelativePositionBias, relative_position_bucket
from .transformer import UniLMLMHead, UniLMTransformer, UniLMTransformerLayer

__all__ = [
    "BiasedSelfAttention",
    "RelativePositionBias",
    "UniLMLMHead",
    "UniLMTransformer",
    "UniLMTransformerLayer",
    "build_attention_bias",
    "relative_position_bucket",
]
