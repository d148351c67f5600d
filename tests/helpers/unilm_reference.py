"""An independent forward of UniLM's BERT layouts (fused "fast QKV" or separate projections, a shared
relative position bias), written from the layout alone, and BERT weights rearranged into the fused layout:
the references the import and export tests compare converted models with."""

import math

import torch
import torch.nn.functional as F

REL_POS_BINS, MAX_REL_POS = 16, 7  # sequences of up to 9 tokens reach the exact, log and clamped buckets
REL_POS_WEIGHT = "bert.rel_pos_bias.weight"


def reference_bucket(relative: int, bins: int, max_distance: int) -> int:
    """UniLM's bidirectional T5 bucket of one signed distance (key - query), written as scalar code."""
    half = bins // 2
    offset = half if relative > 0 else 0
    n = abs(relative)
    exact = half // 2
    if n < exact:
        return offset + n
    large = exact + int(math.log(n / exact) / math.log(max_distance / exact) * (half - exact))
    return offset + min(large, half - 1)


def _projections(state, p, x):
    """Query, key and value of one layer from fused (``qkv_linear`` + ``q_bias``/``v_bias``, no key bias)
    or separate (``query``/``key``/``value``) weights."""
    if p + "qkv_linear.weight" in state:
        q, k, v = (x @ state[p + "qkv_linear.weight"].t()).chunk(3, dim=-1)
        return q + state[p + "q_bias"], k, v + state[p + "v_bias"]
    return [x @ state[f"{p}{n}.weight"].t() + state[f"{p}{n}.bias"] for n in ("query", "key", "value")]


def reference_unilm_forward(state, config, ids, attention_mask, token_type_ids):
    """Final hidden states ``(B, T, C)`` of UniLM's BERT over right-padded ``ids``, positions ``0..T-1``.

    ``state`` holds ``bert.``-prefixed weights; the relative position bias (``bert.rel_pos_bias.weight``,
    ``nn.Linear(bins, heads)``'s weight) is used when present, with ``config``'s ``rel_pos_bins`` and
    ``max_rel_pos`` (:data:`REL_POS_BINS`, :data:`MAX_REL_POS` when it has none).
    """
    assert config.get("hidden_act", "gelu") == "gelu", "the reference uses the exact (erf) GELU"
    heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
    hidden = config["hidden_size"]
    length = ids.size(1)
    positions = torch.arange(length)
    x = (
        state["bert.embeddings.word_embeddings.weight"][ids]
        + state["bert.embeddings.position_embeddings.weight"][positions]
    )
    if "bert.embeddings.token_type_embeddings.weight" in state:
        x = x + state["bert.embeddings.token_type_embeddings.weight"][token_type_ids]
    x = F.layer_norm(
        x, (hidden,), state["bert.embeddings.LayerNorm.weight"], state["bert.embeddings.LayerNorm.bias"], eps
    )
    bias = 0.0
    if REL_POS_WEIGHT in state:
        bins = config.get("rel_pos_bins") or REL_POS_BINS
        far = config.get("max_rel_pos") or MAX_REL_POS
        buckets = torch.tensor(
            [[reference_bucket(k - q, bins, far) for k in range(length)] for q in range(length)]
        )
        # one-hot buckets through nn.Linear(bins, heads): (T, T, bins) @ (bins, H) -> (H, T, T)
        bias = (F.one_hot(buckets, bins).float() @ state[REL_POS_WEIGHT].t()).permute(2, 0, 1)
    pad = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for i in range(config["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}."
        q, k, v = _projections(state, p + "attention.self.", x)
        split = lambda t: t.view(t.size(0), length, heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)) + bias + pad
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape)
        attn = (
            context @ state[p + "attention.output.dense.weight"].t()
            + state[p + "attention.output.dense.bias"]
        )
        ln = p + "attention.output.LayerNorm."
        x = F.layer_norm(x + attn, (hidden,), state[ln + "weight"], state[ln + "bias"], eps)
        h = F.gelu(x @ state[p + "intermediate.dense.weight"].t() + state[p + "intermediate.dense.bias"])
        h = h @ state[p + "output.dense.weight"].t() + state[p + "output.dense.bias"]
        x = F.layer_norm(
            x + h, (hidden,), state[p + "output.LayerNorm.weight"], state[p + "output.LayerNorm.bias"], eps
        )
    return x


def fast_qkv_state(bert_state, num_layers, heads, seed):
    """BERT's weights in UniLM's fast-QKV layout plus a random relative position bias ``(H, bins)``."""
    state = {k: v.clone() for k, v in bert_state.items()}
    for i in range(num_layers):
        p = f"bert.encoder.layer.{i}.attention.self."
        weights = [state.pop(f"{p}{name}.weight") for name in ("query", "key", "value")]
        state[p + "qkv_linear.weight"] = torch.cat(weights, dim=0)
        state[p + "q_bias"] = state.pop(p + "query.bias")
        state[p + "v_bias"] = state.pop(p + "value.bias")
        state.pop(p + "key.bias")  # fast QKV has none
    generator = torch.Generator().manual_seed(seed)
    state[REL_POS_WEIGHT] = torch.randn(heads, REL_POS_BINS, generator=generator)
    return state
