"""Leakage oracle: which input tokens an output depends on (by gradients), which it may depend on (by
reachability over the attention mask), and the check that the two agree with a layout's rules."""

import torch
from torch import Tensor


def reachable(visible: Tensor, hops: int) -> Tensor:
    """``(L, L)`` bool -> ``(L, L)`` bool: information of key ``k`` can reach query ``q``
    within ``hops`` layers, through attention edges or the residual (self)."""
    one_layer = (visible | torch.eye(visible.size(0), dtype=torch.bool)).float()
    reach = torch.eye(visible.size(0))
    for _ in range(hops):
        reach = (reach @ one_layer).clamp(max=1)
    return reach.bool()


def input_dependence(model, tokens, segments, positions, visible, output: str) -> Tensor:
    """``(B, L)`` long inputs and ``(B, L, L)`` mask -> ``touches`` ``(B, L, L)`` bool.

    ``touches[b, q, k]`` is True when the output at ``q`` of example ``b`` has a
    nonzero gradient w.r.t. the input embedding of token ``k`` of the same example.
    One backward pass: example ``b`` is repeated ``L`` times and copy ``q`` only
    backpropagates from its output at ``q``; copies share nothing, so any mixing
    between batch rows would show up as stray gradient.
    """
    bsz, length = tokens.shape
    leaves = []

    def embeddings_as_leaf(module, args, embedded):
        leaf = embedded.detach().requires_grad_(True)
        leaves.append(leaf)
        return leaf

    def copies(t: Tensor) -> Tensor:
        return t.repeat_interleave(length, dim=0)  # B*L x ...; copy q of example b at b*L + q

    handle = model.transformer.embeddings.register_forward_hook(embeddings_as_leaf)
    try:
        out, _ = model(
            copies(tokens),
            copies(segments),
            copies(positions),
            copies(visible),
            features_only=output == "features",
        )
    finally:
        handle.remove()
    (embedded,) = leaves  # B*L x L x C
    # a plain sum of LayerNorm-ed features has a zero gradient; project on a random direction
    projection = torch.randn(out.size(-1), generator=torch.Generator().manual_seed(0))
    query = torch.arange(length).repeat(bsz)
    (out[torch.arange(bsz * length), query] @ projection).sum().backward()
    return embedded.grad.view(bsz, length, length, -1).ne(0).any(-1)


def pairs(where: Tensor):
    return [tuple(p) for p in where.nonzero().tolist()][:12]


def assert_no_leakage(touches: Tensor, visible: Tensor, must_not_see: Tensor, hops: int) -> None:
    """All ``(L, L)``: gradient pattern, mask, rules in words."""
    reach = reachable(visible, hops)
    assert not (reach & must_not_see).any(), f"mask leaks across layers (q, k): {pairs(reach & must_not_see)}"
    leaked = touches & must_not_see
    assert not leaked.any(), f"nonzero gradient from tokens that must not be seen (q, k): {pairs(leaked)}"
    stray = touches & ~reach
    assert not stray.any(), f"nonzero gradient from unreachable tokens (q, k): {pairs(stray)}"
    missing = reach & ~touches
    assert not missing.any(), f"zero gradient from reachable tokens (q, k): {pairs(missing)}"
