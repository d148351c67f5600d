"""fairseq's encoder/decoder interface over the shared UniLM Transformer, for ``SequenceGenerator``.

The source encoder runs "[SOS] source [EOS]" once and keeps every layer's keys
and values, one copy per sentence: the beam hypotheses of a sentence read the
same copy (like fairseq's beamable encoder-decoder attention), so beam search
copies them only when finished sentences leave the batch. Each decoding step
feeds the previous real token and (masked and pseudo-masked methods) a mask
token at the next position; the real token's keys and values join the
per-hypothesis cache, the mask token's never do. The causal method (s2s-ft
§2.1, Figure 1a) encodes "[SOS] source" only: its first step feeds the start
token ``[EOS]`` at the first target position, which is cached like a real
target token and predicts ``t_1``; every later step feeds the previous token,
whose output predicts the next. Without an incremental state the decoder
recomputes the whole prefix for the next token through the training layout
(:mod:`unilm_fairseq.seq2seq_layout`).

Source tokens get the source segment id and every fed token, real or mask, the target segment id:
0/1, or 4/5 for a UniLM v1 model (:func:`unilm_fairseq.seq2seq_layout.pretrained_segments`), as the
model's config records them.

Neither view owns parameters: both hold the model's Transformer and LM head
without registering them, so the state dict, ``.half()`` and ``.to()`` go
through the model alone. Both read the method and the segment ids from the
model's s2s-ft spec (:class:`unilm_fairseq.seq2seq_layout.Seq2SeqSpec`), the
object the model holds as ``seq2seq_spec``.

A cached decoding step reads nothing back from the device. Which copy of the
source each row reads is settled when the rows are reordered
(:meth:`UniLMSourceEncoder.reorder_encoder_out`). The position ids a decode can
reach are known before it starts (:func:`last_decoding_position`), so they are
checked once per generate call (the task's ``inference_step``, with
:func:`check_decoding_positions`); recomputed decoding checks the batch it lays
out on the CPU.
"""

import logging
import weakref
from typing import Dict, List, Optional

import torch
from fairseq.models import FairseqEncoder, FairseqIncrementalDecoder
from torch import Tensor

from .. import masks, seq2seq_layout
from ..modules.attention import shared_keys_values
from ..seq2seq_layout import FinetuneMethod, Seq2SeqSpec
from .static_decoding import StaticDecodingStep

logger = logging.getLogger(__name__)

# how a cached decoding step runs (UniLMIncrementalDecoder.step_mode)
STEP_MODES = ("eager", "static", "cuda_graph")


def _share(module, name, value):
    object.__setattr__(module, name, value)  # a reference, not a registered submodule


def source_positions(padding: Tensor) -> Tensor:
    """``(B, S)`` padding (either side) -> position ids ``0..n-1`` of the real tokens, 0 on padding."""
    return ((~padding).long().cumsum(1) - 1).clamp(min=0)


# encoder outputs kept once per sentence: beam hypotheses of a sentence share them (never reordered)
PER_SENTENCE = ("keys", "values")


def sentence_groups(rows: Tensor) -> Optional[Tensor]:
    """The sentences of ``rows`` when they form equal blocks of consecutive rows, else None.

    Args:
        rows: ``(R,)`` long, the sentence each decoder row (hypothesis) belongs to.
    Returns:
        ``(G,)`` long, the sentence of each block of ``R / G`` rows, strictly increasing; None when
        the rows are in any other order (fairseq's beam search never produces one).
    """
    sentences, counts = torch.unique_consecutive(rows, return_counts=True)
    if bool((counts != counts[0]).any()) or bool((sentences[1:] <= sentences[:-1]).any()):
        return None
    return sentences


def last_decoding_position(method: FinetuneMethod, source_len: int, steps: int) -> int:
    """The largest position id a decode uses, for sources of at most ``source_len`` tokens.

    ``steps`` is the last decoding step (fairseq's generator runs steps ``0..max_len``). The source
    takes positions ``0..source_len - 1``. The target side starts at position ``source_len``, or
    ``source_len - 1`` in the causal method (its start token is the source's ``[EOS]``). Step ``t``
    asks for the target at ``start + t`` with a mask token there (masked, pseudo-masked), or feeds
    the token at ``start + t`` (causal).
    """
    start = source_len - 1 if method == FinetuneMethod.CAUSAL else source_len
    return max(source_len - 1, start + steps)


def check_decoding_positions(last_position: int, max_positions: int, remedy: Optional[str] = None) -> None:
    """A clear error when decoding would use position ``last_position`` of a ``max_positions``-row table;
    ``remedy`` says what to change (by default the length limit and the source)."""
    if last_position >= max_positions:
        raise ValueError(
            f"decoding reached position {last_position}, beyond the position table "
            f"(max_positions={max_positions}); {remedy or 'lower --max-len-b or the source length'}"
        )


def last_real_token(padding: Tensor) -> Tensor:
    """``(B, S)`` padding (either side) -> ``(B, S)`` bool, True at each row's last real token."""
    real = ~padding
    return real & real.long().cumsum(1).eq(real.long().sum(1, keepdim=True))


class UniLMSourceEncoder(FairseqEncoder):
    def __init__(
        self,
        dictionary,
        transformer,
        lm_head,
        spec: Seq2SeqSpec = Seq2SeqSpec(),
    ):
        super().__init__(dictionary)
        _share(self, "transformer", transformer)
        _share(self, "lm_head", lm_head)
        self.spec = spec

    def source_states(self, src_tokens: Tensor, keys_values_only: bool = False):
        """The bidirectional encoding of the source segment (source segment, positions ``0..n-1``).

        The source segment is "[SOS] source [EOS]", except in the causal method, where it is
        "[SOS] source": there the closing ``[EOS]`` is the decoder's start token (s2s-ft §2.1,
        Figure 1a), so it is treated as padding here and fed by the decoder's first step.

        Args:
            src_tokens: ``(B, S)`` "[SOS] source [EOS]", padded on either side.
            keys_values_only: leave out the last layer's attention and feed-forward: decoding reads
                only the source's keys and values, and their last layer needs only its input.
        Returns:
            final hidden states ``(B, S, C)`` (None with ``keys_values_only``), per-layer
            ``(keys, values)``, ``padding`` and ``positions`` ``(B, S)``; ``padding`` is True outside
            the source segment.
        """
        padding = src_tokens.eq(self.dictionary.pad())
        if self.spec.causal:
            padding = padding | last_real_token(padding)
        positions = source_positions(padding)
        segments = torch.full_like(src_tokens, self.spec.source_segment)
        hidden, kv = self.transformer(
            src_tokens, segments, positions, masks.padded_bidirectional_mask(padding),
            keys_values_only=keys_values_only,
        )  # fmt: skip
        return hidden, kv, padding, positions

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None, **unused):
        """
        Args:
            src_tokens: ``(B, S)`` "[SOS] source [EOS]", padded on either side.
        Returns:
            dict of lists. Per copy of the source (one per sentence; reordered only as
            :meth:`reorder_encoder_out` says): ``keys``/``values``, one ``(B, H, S, D)`` per layer.
            Per decoder row, reordered with the beam: ``rows`` ``(B,)``, the copy each row reads;
            ``src_tokens``; ``padding`` and ``positions``
            ``(B, S)`` of the source segment (:meth:`source_states`); ``lengths`` ``(B,)``, its
            length, which is the first target position.
        """
        _, kv, padding, positions = self.source_states(src_tokens, keys_values_only=True)
        kv = [shared_keys_values(k, v) for k, v in kv]  # read in place by every step
        batch = torch.arange(src_tokens.size(0), device=src_tokens.device)
        return {
            "keys": [k for k, _ in kv],
            "values": [v for _, v in kv],
            "rows": [batch],
            "src_tokens": [src_tokens],
            "padding": [padding],
            "positions": [positions],
            "lengths": [(~padding).long().sum(1)],
        }

    def reorder_encoder_out(self, encoder_out: Dict[str, List[Tensor]], new_order):
        """Reorder the per-row entries, keeping the source keys and values read by equal blocks of rows.

        ``rows`` tracks which copy of the keys each row reads. After a reorder every copy is read by
        one block of consecutive rows, as the decoder expects: beam search's orders keep the copies
        as they are, or (finished sentences left the batch) gather the remaining ones once; any
        other order gets one copy per row. Reads the new order back to the host, here rather than
        in every decoding step: once for an order that keeps every row in its block (each step of
        beam search), a few times when the rows change.
        """
        reordered = {
            key: ts if key in PER_SENTENCE else [t.index_select(0, new_order) for t in ts]
            for key, ts in encoder_out.items()
        }
        rows = reordered["rows"][0]
        # `rows` is in blocks before the reorder (built so, and every reorder leaves it so): unchanged,
        # it still is
        if rows.size(0) == encoder_out["rows"][0].size(0) and torch.equal(rows, encoder_out["rows"][0]):
            return reordered
        sentences = sentence_groups(rows)
        if sentences is not None and len(sentences) == encoder_out["keys"][0].size(0):
            return reordered  # increasing, so all of them: the blocks read the copies in order
        kept = rows if sentences is None else sentences
        kv = [
            shared_keys_values(k.index_select(0, kept), v.index_select(0, kept))
            for k, v in zip(encoder_out["keys"], encoder_out["values"])
        ]
        reordered["keys"], reordered["values"] = [k for k, _ in kv], [v for _, v in kv]
        copies = torch.arange(len(kept), device=rows.device)
        reordered["rows"] = [copies.repeat_interleave(len(rows) // len(kept))]
        return reordered


class UniLMIncrementalDecoder(FairseqIncrementalDecoder):
    def __init__(
        self,
        dictionary,
        transformer,
        lm_head,
        spec: Seq2SeqSpec,
    ):
        super().__init__(dictionary)
        _share(self, "transformer", transformer)
        _share(self, "lm_head", lm_head)
        self.spec = spec
        self.mask_idx = dictionary.index("<mask>")
        # "eager": every step as shaped by the cache so far; "static": fixed-shape steps over a
        # preallocated cache (StaticDecodingStep), run eagerly; "cuda_graph": the same steps replayed
        # from a CUDA graph on a CUDA device (eager elsewhere)
        self.step_mode = "eager"

    def max_positions(self):
        return self.transformer.embeddings.positions.num_embeddings

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, **unused):
        """
        Args:
            prev_output_tokens: ``(B, t+1)``: ``[EOS]`` then the ``t`` tokens generated so far.
            encoder_out: :class:`UniLMSourceEncoder` output.
        Returns:
            logits of the next token ``(B, 1, V)`` and ``{"attn": None}``.
        """
        if encoder_out is None:
            raise ValueError("the UniLM decoder needs the source encoder's output")
        if incremental_state is None:
            logits = self._recompute(prev_output_tokens, encoder_out)
        else:
            logits = self._step(prev_output_tokens, encoder_out, incremental_state)
        return logits.unsqueeze(1), {"attn": None}

    def _step(self, tokens, encoder_out, incremental_state) -> Tensor:
        """One decoding step; the cache holds the keys and values of the real target tokens only.

        Causal (s2s-ft §2.1, Figure 1a): step 0 feeds the start token ``[EOS]`` (the dictionary's
        ``eos``) at the first target position; step ``t > 0`` feeds ``t_t``. The fed token is cached
        and its output is the next token's. Other methods: step ``t > 0`` feeds ``t_t`` (cached) and
        every step a mask token after it (never cached), whose output is the next token's.
        """
        step = tokens.size(1) - 1
        static = self.get_incremental_state(incremental_state, "static")
        if static is None and self._static_steps(tokens.device) and (self.spec.causal or step > 0):
            # from here on every step feeds the same tokens: fixed shapes from a preallocated cache
            cache = self._eager_cache(incremental_state, encoder_out, tokens.size(0))
            static = self._static_state(incremental_state, encoder_out, cache)
            self.set_incremental_state(incremental_state, "static", static)
            self.set_incremental_state(incremental_state, "cache", None)
        if static is not None:
            logits = static.step(tokens, encoder_out)
            if logits is not None:
                return logits
            # the rows no longer fit the fixed shape: on as before, from its cache
            self.set_incremental_state(incremental_state, "static", None)
            self.set_incremental_state(incremental_state, "cache", static.eager_cache())
        cache = self._eager_cache(incremental_state, encoder_out, tokens.size(0))
        position = cache["next_position"]
        new_tokens, new_positions = [], []
        if self.spec.causal and step == 0:  # the start token: cached, predicts t_1
            new_tokens.append(torch.full_like(tokens[:, -1], self.dictionary.eos()))
            new_positions.append(position)
        elif step > 0:  # the token chosen last step becomes context
            new_tokens.append(tokens[:, -1])
            new_positions.append(position)
        fed = len(new_tokens)  # 0 or 1 real token, cached
        if not self.spec.causal:  # ask for the next token with a mask token
            new_tokens.append(torch.full_like(tokens[:, -1], self.mask_idx))
            new_positions.append(position + len(new_positions))
        x = torch.stack(new_tokens, 1)  # B x n (n = 1 or 2)
        positions = torch.stack(new_positions, 1)  # checked once per decode, not here
        visible = masks.decoding_step_mask(
            encoder_out["padding"][0], cache["key_positions"].size(1), x.size(1)
        )
        # each copy of the source is read by a block of consecutive rows (reorder_encoder_out)
        shared = list(zip(encoder_out["keys"], encoder_out["values"]))
        cached_kv = cache["kv"]
        prefix = [layer.unbind(0) for layer in cached_kv.unbind(0)]
        new_kv = None
        if not torch.is_grad_enabled():  # the layers write [cached | fed tokens] here, the real token first
            new_shape = cached_kv.shape[:4] + (cached_kv.size(4) + x.size(1), cached_kv.size(5))
            new_kv = cached_kv.new_empty(new_shape)
        hidden, kv = self.transformer(
            x,
            torch.full_like(x, self.spec.target_segment),
            positions,
            visible,
            prefix=prefix,
            prefix_positions=torch.cat([encoder_out["positions"][0], cache["key_positions"]], 1),
            shared=shared,
            kv_out=new_kv,
        )
        if new_kv is None:  # a caller differentiating through the step: stacked, with gradients
            new_kv = torch.stack([torch.stack(layer) for layer in kv])
        if fed:  # cache the real token only, never the mask token: a view, no second copy (the next
            # reorder copies it anyway)
            cache["kv"] = new_kv.narrow(4, 0, cached_kv.size(4) + 1)
            cache["key_positions"] = torch.cat([cache["key_positions"], position.unsqueeze(1)], 1)
            cache["next_position"] = position + 1
        self.set_incremental_state(incremental_state, "cache", cache)
        return self.lm_head(hidden[:, -1])

    def _static_state(self, incremental_state, encoder_out, cache) -> "StaticDecodingStep":
        """The fixed-shape state for this decode: the last one made, restarted, when it is free and has
        this decode's shapes, else a new one, which is then kept in its place.

        Reusing the state keeps its tensors where they are, so a CUDA graph captured by an earlier
        generate call replays here too: batches of one shape (sources cut to one length, a fixed batch
        size) capture once. A state is free when the decode that used it has ended: that decode's
        incremental state holds its lease, and fairseq drops the incremental state when its generate
        call returns. So two decodes that overlap never share one. The kept state holds its cache and
        the source keys it last read until the next decode replaces it (:meth:`release_static_state`
        frees them).
        """
        graph = self.step_mode == "cuda_graph"
        kept, lease = getattr(self, "_kept_static", (None, None))
        if kept is not None and lease() is None and kept.fits(encoder_out, cache, graph):
            kept.restart(encoder_out, cache)
            static = kept
        else:
            static = StaticDecodingStep(self, encoder_out, cache, graph=graph)
        new_lease = _Lease()
        self.set_incremental_state(incremental_state, "static_lease", new_lease)
        object.__setattr__(self, "_kept_static", (static, weakref.ref(new_lease)))
        return static

    def release_static_state(self) -> None:
        """Drop the fixed-shape state kept for the next decode (its cache, source keys and CUDA graph).

        Moving or casting the model (``.to()``, ``.half()``) and going back to training (``.train()``)
        drop it too, and pickling or copying the decoder leaves it behind.
        """
        object.__setattr__(self, "_kept_static", (None, None))

    def _apply(self, fn, *args, **kwargs):
        self.release_static_state()
        return super()._apply(fn, *args, **kwargs)

    def train(self, mode: bool = True):
        if mode:
            self.release_static_state()
        return super().train(mode)

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_kept_static", None)
        return state

    def _eager_cache(self, incremental_state, encoder_out, bsz: int) -> Dict[str, Tensor]:
        """The eager steps' cache: the incremental state's, or an empty one before the first target token."""
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is not None:
            return cache
        keys = encoder_out["keys"][0]
        return {
            # every layer's keys and values in one tensor: L x 2 x B x H x P x D
            "kv": keys.new_zeros(len(encoder_out["keys"]), 2, bsz, keys.size(1), 0, keys.size(3)),
            "key_positions": encoder_out["positions"][0].new_zeros(bsz, 0),
            "next_position": encoder_out["lengths"][0],
        }

    def _static_steps(self, device: torch.device) -> bool:
        """Whether cached steps go fixed-shape (:attr:`step_mode`); a CUDA graph needs a CUDA device."""
        if self.step_mode not in STEP_MODES:
            raise ValueError(f"step_mode must be one of {STEP_MODES}, got {self.step_mode!r}")
        if self.step_mode == "cuda_graph" and device.type != "cuda":
            if not getattr(self, "_told_no_graph", False):
                logger.info("CUDA graph decoding needs a CUDA device; steps run eagerly on %s", device)
                self._told_no_graph = True
            return False
        return self.step_mode != "eager" and not torch.is_grad_enabled()

    def _recompute(self, tokens, encoder_out) -> Tensor:
        """The next token's logits from a full forward over source, prefix and query."""
        pad = self.dictionary.pad()
        src_tokens = encoder_out["src_tokens"][0]
        examples = []
        # laid out on the CPU, as the training data is, then moved to the decoding device in one go
        for source, generated in zip(src_tokens.cpu(), tokens[:, 1:].cpu()):
            source = source[source.ne(pad)]
            # the last slot is the token being predicted: a mask token input, or (causal) not fed;
            # causal feeds the source's [EOS] as the start token (seq2seq_layout.build_example)
            target = torch.cat([generated, generated.new_full((1,), self.mask_idx)])
            predict = torch.zeros(len(target), dtype=torch.bool)
            predict[-1] = True
            method = FinetuneMethod.CAUSAL if self.spec.causal else FinetuneMethod.MASKED
            if self.spec.causal:
                predict[:] = True
            examples.append(
                seq2seq_layout.build_example(
                    source, target, predict, method, self.mask_idx, self.spec.segments
                )
            )
        batch = seq2seq_layout.collate_examples(examples, pad, segment_pad=self.spec.source_segment)
        check_decoding_positions(int(batch["positions"].max()), self.max_positions())  # on the CPU
        batch = {k: v.to(tokens.device) for k, v in batch.items()}
        hidden, _ = self.transformer(
            batch["tokens"], batch["segments"], batch["positions"], batch["attn_mask"]
        )
        # the last query of each row is the next token
        last_query = (
            batch["masked_tokens"].long() * torch.arange(hidden.size(1), device=hidden.device)
        ).argmax(1)
        return self.lm_head(hidden[torch.arange(hidden.size(0), device=hidden.device), last_query])

    def reorder_incremental_state(self, incremental_state, new_order):
        static = self.get_incremental_state(incremental_state, "static")
        if static is not None:
            if not static.reorder(new_order):  # more rows than it holds: on with an eager cache
                self.set_incremental_state(incremental_state, "static", None)
                self.set_incremental_state(incremental_state, "cache", static.eager_cache(new_order))
            return
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is not None:
            # rows are dimension 2 of the keys and values (L x 2 x B x H x P x D), 0 elsewhere
            rows = {"kv": 2}
            cache = {key: value.index_select(rows.get(key, 0), new_order) for key, value in cache.items()}
            self.set_incremental_state(incremental_state, "cache", cache)


class _Lease:
    """Held by a decode's incremental state while it uses the decoder's kept :class:`StaticDecodingStep`."""
