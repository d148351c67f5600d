"""Self-attention masks for every layout the plugin trains or decodes with.

Naming: a bool ``visible`` mask is True where the query may attend to the key; the float
``attn_bias`` the attention adds to its scores holds the most negative float where it may not. The
batch key and model argument ``attn_mask`` hold a ``visible`` mask.

Every builder is a pure function returning a bool tensor ``visible`` of shape
``(L, L)`` for one example: ``visible[q, k]`` is True when the token at query
position ``q`` may attend to the token at key position ``k``. :func:`pad_masks`
stacks per-example masks into a batch ``(B, L, L)``; :func:`decoding_step_mask`
gives the rows of the seq2seq layouts that one cached decoding step computes.

The rules, in words (docs/masks.md sections 2-5, with diagrams):

* bidirectional: every token sees every token.
* left-to-right: a token sees itself and the tokens before it.
* right-to-left: a token sees itself and the tokens after it.
* seq2seq, layout ``[source | target]``: source tokens see the whole source and
  no target; target token ``j`` sees the whole source and targets ``0..j``.
* pseudo-masked seq2seq (s2s-ft), layout ``[source | target | pseudo]``: source
  and target as seq2seq; pseudo token ``j`` sees the whole source, targets
  ``0..j-1`` and itself; no other token sees a pseudo token.
* a cached decoding step, keys ``[source | cached targets | new]``: each new
  token sees the real source tokens, every cached target token and the new
  tokens up to itself.
* PMLM (UniLMv2), layout ``[context | appended]``: the context (unmasked tokens
  and ``[M]``) sees only the context. Each appended token belongs to one
  factorization step ``i >= 1`` and is either an original token or a ``[P]``.
  An original of step ``i`` sees the context and the originals of steps
  ``<= i``; a ``[P]`` of step ``i`` sees the context, the originals of steps
  ``< i`` and the ``[P]`` tokens of step ``i``. No other token sees a ``[P]``.
  :func:`pmlm_mask` builds it for one example; :func:`pmlm_batch_mask` builds a
  whole batch from its step and kind columns, without per-example masks.
"""

from typing import Optional, Sequence

import numpy as np
import torch
from torch import Tensor


def _check_lengths(**lengths: int) -> None:
    for name, value in lengths.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")


def bidirectional_mask(length: int) -> Tensor:
    """All tokens see all tokens. Returns ``(length, length)`` bool."""
    _check_lengths(length=length)
    return torch.ones(length, length, dtype=torch.bool)


def left_to_right_mask(length: int) -> Tensor:
    """Query ``q`` sees keys ``k <= q``. Returns ``(length, length)`` bool."""
    _check_lengths(length=length)
    return torch.ones(length, length, dtype=torch.bool).tril()


def right_to_left_mask(length: int) -> Tensor:
    """Query ``q`` sees keys ``k >= q``. Returns ``(length, length)`` bool."""
    _check_lengths(length=length)
    return torch.ones(length, length, dtype=torch.bool).triu()


def seq2seq_mask(source_len: int, target_len: int) -> Tensor:
    """Layout ``[source | target]``; returns ``(S+T, S+T)`` bool.

    Source sees source; target ``j`` sees all source and targets ``<= j``.
    """
    _check_lengths(source_len=source_len, target_len=target_len)
    total = source_len + target_len
    visible = torch.zeros(total, total, dtype=torch.bool)
    visible[:, :source_len] = True
    visible[source_len:, source_len:] = left_to_right_mask(target_len)
    return visible


def pseudo_masked_seq2seq_mask(source_len: int, target_len: int) -> Tensor:
    """Layout ``[source | target | pseudo]``; returns ``(S+2T, S+2T)`` bool.

    Source and target follow :func:`seq2seq_mask`. Pseudo ``j`` sees the whole
    source, targets ``< j`` and itself; only itself sees it.
    """
    _check_lengths(source_len=source_len, target_len=target_len)
    real = source_len + target_len
    total = real + target_len
    visible = torch.zeros(total, total, dtype=torch.bool)
    visible[:real, :real] = seq2seq_mask(source_len, target_len)
    pseudo = slice(real, total)
    visible[pseudo, :source_len] = True
    # strictly-before: target k is visible to pseudo j when k < j
    visible[pseudo, source_len:real] = left_to_right_mask(target_len).tril(-1)
    visible[pseudo, pseudo] = torch.eye(target_len, dtype=torch.bool)
    return visible


def decoding_step_mask(source_padding: Tensor, cached_len: int, new_len: int) -> Tensor:
    """Visibility of the tokens one cached decoding step feeds, over ``[source | cached | new]`` keys.

    A step feeds at most one real target token (cached for later steps) and, in the masked and
    pseudo-masked methods, a mask token after it that asks for the next target. The real token sees
    what it sees in the training layout (:func:`seq2seq_mask`): the source, the targets before it
    and itself. The mask token sees the source, every real target so far and itself, as a pseudo
    token does in :func:`pseudo_masked_seq2seq_mask` (or a trailing ``[M]`` in :func:`seq2seq_mask`).

    Args:
        source_padding: ``(B, S)`` bool, True at source keys outside the source segment (padding;
            in the causal method also the source's ``[EOS]``, fed later as the start token).
        cached_len: ``P``, the target tokens cached by earlier steps (all visible).
        new_len: ``T``, the tokens fed this step, in position order.
    Returns:
        ``(B, T, S + P + T)`` bool on ``source_padding``'s device; new token ``i`` sees new tokens
        ``0..i``.
    """
    _check_lengths(cached_len=cached_len, new_len=new_len)
    if source_padding.dim() != 2:
        raise ValueError(f"source_padding must be (B, S), got shape {tuple(source_padding.shape)}")
    bsz = source_padding.size(0)
    device = source_padding.device
    source = (~source_padding).unsqueeze(1).expand(bsz, new_len, -1)
    cached = torch.ones(bsz, new_len, cached_len, dtype=torch.bool, device=device)
    new = torch.ones(new_len, new_len, dtype=torch.bool, device=device).tril().expand(bsz, -1, -1)
    return torch.cat([source, cached, new], 2)


def pmlm_mask(context_len: int, step: Tensor, is_pseudo: Tensor) -> Tensor:
    """UniLMv2 pseudo-masked LM layout ``[context | appended]``.

    Args:
        context_len: number of context tokens (unmasked tokens and ``[M]``).
        step: ``(A,)`` long, factorization step (``>= 1``) of each appended token.
        is_pseudo: ``(A,)`` bool, True for ``[P]``, False for an original token.

    Returns:
        ``(C+A, C+A)`` bool, with the visibility rules of the module docstring.
    """
    _check_lengths(context_len=context_len)
    if step.dim() != 1 or is_pseudo.dim() != 1 or step.numel() != is_pseudo.numel():
        raise ValueError(
            f"step and is_pseudo must be 1-D of equal length, got shapes "
            f"{tuple(step.shape)} and {tuple(is_pseudo.shape)}"
        )
    if step.numel() and int(step.min()) < 1:
        raise ValueError(f"factorization steps start at 1, got min step {int(step.min())}")
    appended = step.numel()
    total = context_len + appended
    visible = torch.zeros(total, total, dtype=torch.bool)
    # everyone sees the context; the context sees nothing else
    visible[:, :context_len] = True

    q_step = step.view(-1, 1)
    k_step = step.view(1, -1)
    q_pseudo = is_pseudo.view(-1, 1)
    k_pseudo = is_pseudo.view(1, -1)
    original_sees_original = ~q_pseudo & ~k_pseudo & (k_step <= q_step)
    pseudo_sees_original = q_pseudo & ~k_pseudo & (k_step < q_step)
    pseudo_sees_own_step = q_pseudo & k_pseudo & (k_step == q_step)
    visible[context_len:, context_len:] = original_sees_original | pseudo_sees_original | pseudo_sees_own_step
    return visible


def pad_masks(masks: Sequence[Tensor], length: Optional[int] = None) -> Tensor:
    """Stack per-example ``(Li, Li)`` masks into ``(B, L, L)``.

    Padded keys are invisible to every query. A padded query sees only itself,
    so no softmax row is empty (its output is discarded anyway).
    """
    longest = max((m.size(0) for m in masks), default=0)
    length = longest if length is None else length
    if length < longest:
        raise ValueError(f"pad length {length} is shorter than the longest mask {longest}")
    batch = torch.zeros(len(masks), length, length, dtype=torch.bool)
    for i, visible in enumerate(masks):
        if visible.dim() != 2 or visible.size(0) != visible.size(1):
            raise ValueError(f"mask {i} must be square (L, L), got shape {tuple(visible.shape)}")
        n = visible.size(0)
        batch[i, :n, :n] = visible
        pad = torch.arange(n, length)
        batch[i, pad, pad] = True
    return batch


def padded_bidirectional_mask(padding: Tensor) -> Tensor:
    """Bidirectional attention over a padded batch (padding on either side).

    Args:
        padding: ``(B, S)`` bool, True at padded positions.
    Returns:
        ``(B, S, S)`` bool: real tokens see every real token; a padded query
        sees only itself (its output is discarded).
    """
    if padding.dim() != 2:
        raise ValueError(f"padding must be (B, S), got shape {tuple(padding.shape)}")
    real = ~padding
    visible = real.unsqueeze(1) & real.unsqueeze(2)
    eye = torch.eye(padding.size(1), dtype=torch.bool, device=padding.device)
    return visible | (eye & padding.unsqueeze(2))


def pad_masks_after_context(masks: Sequence[Tensor], context_lengths: Sequence[int]) -> Tensor:
    """Batch ``[context | appended]`` masks with every appended part starting at one column.

    Example ``i``'s first ``context_lengths[i]`` tokens go to columns ``0..``;
    its remaining tokens start at column ``C = max(context_lengths)``. Padding
    follows :func:`pad_masks`: padded keys are invisible, a padded query sees
    only itself. Returns ``(B, C + A, C + A)`` with ``A`` the longest appended part.
    """
    if len(masks) != len(context_lengths):
        raise ValueError(f"{len(masks)} masks but {len(context_lengths)} context lengths")
    width = max(context_lengths, default=0)
    appended = max((m.size(0) - c for m, c in zip(masks, context_lengths)), default=0)
    length = width + appended
    batch = torch.zeros(len(masks), length, length, dtype=torch.bool)
    batch[:, torch.arange(length), torch.arange(length)] = True  # padded queries see themselves
    for i, (visible, context) in enumerate(zip(masks, context_lengths)):
        n = visible.size(0)
        columns = torch.cat([torch.arange(context), width + torch.arange(n - context)])
        batch[i, columns.unsqueeze(1), columns.unsqueeze(0)] = visible
    return batch


def pmlm_batch_mask(
    context_lengths: Tensor, appended_lengths: Tensor, step: Tensor, is_pseudo: Tensor
) -> Tensor:
    """The PMLM masks of a batch (UniLMv2 §3.2, Figure 5), laid out as :func:`pad_masks_after_context`.

    Equal to ``pad_masks_after_context([pmlm_mask(c_i, step_i, is_pseudo_i) ...], context_lengths)``
    but built for the whole batch at once: the context columns are filled by slices, and the
    appended block comes from comparisons of the step ids over ``(B, A, A)``, not from ``B``
    per-example ``(L_i, L_i)`` masks scattered into the batch.

    CPU tensors only (it runs in data loading).

    Args:
        context_lengths: ``(B,)`` long, ``C_i``.
        appended_lengths: ``(B,)`` long, ``A_i``, the appended tokens of each example.
        step: ``(B, A)`` long, the factorization step (``>= 1``) of example ``i``'s appended token
            ``j`` in column ``j < A_i``; columns past ``A_i`` are padding (any value).
        is_pseudo: ``(B, A)`` bool, True for ``[P]``, False for an original token.
    Returns:
        ``(B, C + A, C + A)`` bool with ``C = max(C_i)``, ``A = step.size(1)``: example ``i``'s
        context at columns ``0..C_i-1``, its appended tokens from column ``C``; padded keys are
        invisible and a padded query sees only itself.
    """
    if step.dim() != 2 or step.shape != is_pseudo.shape:
        raise ValueError(
            f"step and is_pseudo must be (B, A) of one shape, got {tuple(step.shape)} and "
            f"{tuple(is_pseudo.shape)}"
        )
    bsz, appended = step.shape
    if context_lengths.shape != (bsz,) or appended_lengths.shape != (bsz,):
        raise ValueError(
            f"context_lengths and appended_lengths must be ({bsz},), got {tuple(context_lengths.shape)} "
            f"and {tuple(appended_lengths.shape)}"
        )
    if bsz and int(appended_lengths.max()) > appended:
        raise ValueError(f"an appended length {int(appended_lengths.max())} is longer than step's {appended}")
    # numpy: per-call overhead is lower than torch's for the many small slices below
    context_lengths, appended_lengths = context_lengths.tolist(), appended_lengths.tolist()
    width = max(context_lengths, default=0)
    length = width + appended
    visible = np.zeros((bsz, length, length), dtype=bool)
    for i, (context, tail) in enumerate(zip(context_lengths, appended_lengths)):
        visible[i, :context, :context] = True  # the context sees the context
        visible[i, width : width + tail, :context] = True  # so does every appended token
    if appended:
        step, is_pseudo = step.numpy(), is_pseudo.numpy()
        real = np.arange(appended) < np.array(appended_lengths).reshape(-1, 1)
        pseudo = is_pseudo & real
        original = real & ~is_pseudo
        # an original key of step s is seen by an original query of step >= s and a [P] of step > s:
        # key s <= the query's threshold (its step, minus one for a [P]; -1 for padding)
        threshold = np.where(real, step - pseudo, -1)
        key_step = np.where(original, step, np.iinfo(step.dtype).max)
        sees = key_step[:, None, :] <= threshold[:, :, None]
        # a [P] key is seen by the [P]s of its own step only (-1 and -2 never match)
        sees |= np.where(pseudo, step, -1)[:, None, :] == np.where(pseudo, step, -2)[:, :, None]
        visible[:, width:, width:] = sees
    visible.reshape(bsz, length * length)[:, :: length + 1] = True  # padded queries see themselves
    return torch.from_numpy(visible)
