"""Cached decoding steps of one fixed shape, which a CUDA graph can record once and replay.

:class:`unilm_fairseq.models.generation.UniLMIncrementalDecoder` switches to these steps when its
``step_mode`` is ``"static"`` or ``"cuda_graph"`` (the ``unilm_seq2seq`` task's ``--decoding-step``), and
keeps one for its next decode of the same shape. Its eager steps remain the reference: these give
the same logits up to the order of float additions.
"""

from typing import Dict, Optional

import torch
from torch import Tensor

# target slots of a fixed-shape step's cache at first; doubled (and a CUDA graph captured again) when full
STATIC_CAPACITY = 64
# the profiler range of StaticDecodingStep.forward: what a CUDA graph records and replays
STATIC_STEP_RANGE = "unilm static decoding step"


class StaticDecodingStep:
    """Cached decoding steps of fixed shape, over a preallocated cache: what a CUDA graph replays.

    An eager step is shaped by the cache so far (``P`` grows by one every step) and by the rows still
    decoding, and its host issues some 700 calls at base size. Here every tensor a step reads or
    writes is allocated once, at a fixed address:

    * the keys and values of ``capacity`` target slots per layer and row, ``(L, 2, B, H, K, D)``
      (``K = capacity``, plus one slot that the mask token overwrites every step in the masked and
      pseudo-masked methods); a step writes its real token into slot ``count`` and attends to
      ``[source | K slots]``, with the slots past ``count`` masked out by the bias (their softmax
      weights are exactly 0);
    * the tokens fed, ``count`` (a device scalar inside ``slots``) and the per-row source data.

    The step's logits are those of the eager step up to the order of float additions in the softmax
    and the weighted sum, which now run over the masked slots too.

    Rows that finish leave the generator's batch: their places here become the last rows, decoded
    along with the others and never read (their share of a step is a small part of a GPU's time, and
    no shape changes). The source keys stay at their addresses: when finished sentences leave,
    :meth:`.generation.UniLMSourceEncoder.reorder_encoder_out` gathers the remaining copies, and :meth:`step`
    copies them into the first groups of the original tensors. An order that would need other shapes
    (more rows, rows not in blocks of the beam size) hands back an eager cache (:meth:`eager_cache`).
    When every slot is filled the state grows to twice the slots (and a graph is captured again).

    With ``graph``, the first step is captured as a CUDA graph (after a warm-up run on a side stream)
    and every step replays it: a step then costs the host a few calls instead of hundreds. The decoder
    keeps the state for its next decode: one that :meth:`fits` is :meth:`restart`-ed in these tensors and
    replays the same graph (:meth:`.generation.UniLMIncrementalDecoder._static_state`).
    """

    def __init__(self, decoder, encoder_out, cache, graph: bool = False):
        kv = cache["kv"]  # L x 2 x B x H x P x D
        layers, _, bsz, heads, cached, head_dim = kv.shape
        keys = encoder_out["keys"][0]
        if bsz % keys.size(0):
            raise ValueError(f"{bsz} rows cannot be split into {keys.size(0)} groups of shared keys")
        capacity = STATIC_CAPACITY
        while capacity <= cached:
            capacity *= 2
        self.decoder = decoder
        self.graph = graph
        self.rows = bsz  # rows of every tensor here
        self.live = bsz  # the first `live` rows are the generator's
        self.per_group = bsz // keys.size(0)  # rows per copy of the source (the beam)
        self.count = cached  # real target tokens cached (slots filled)
        self.capacity = capacity
        self.fed = 1 if decoder.spec.causal else 2  # the real token, then (not causal) the mask token
        device = kv.device
        self.kv = kv.new_zeros(layers, 2, bsz, heads, capacity + self.fed - 1, head_dim)
        self.kv.narrow(4, 0, cached).copy_(kv)
        # the slots this step writes: the real token's (`count`), then the mask token's (the last)
        self.slots = torch.tensor([cached, capacity][: self.fed], device=device)
        self.advance = torch.tensor([1, 0][: self.fed], device=device)
        self.offsets = torch.arange(self.fed, device=device)  # of the fed positions from lengths + count
        self.slot_range = torch.arange(capacity, device=device)
        self.tokens = torch.full((bsz, self.fed), decoder.mask_idx, dtype=torch.long, device=device)
        self.segments = torch.full_like(self.tokens, decoder.spec.target_segment)
        self.lengths = encoder_out["lengths"][0].clone()
        self.padding = encoder_out["padding"][0].clone()
        self.source_positions = encoder_out["positions"][0].clone()
        # the mask token's own slot: seen by the mask token only
        self.own_slot = torch.ones(self.fed, self.fed - 1, dtype=torch.bool, device=device).tril(-1)
        self.shared = list(zip(encoder_out["keys"], encoder_out["values"]))
        # the encoder output the shared keys were last taken from: its copies of the source are the ones the
        # live rows read
        self.source_keys = keys
        self.cuda_graph = None
        self.logits = None

    def fits(self, encoder_out, cache, graph: bool) -> bool:
        """Whether :meth:`restart` can take this decode: the same rows, beam, source shape, dtype, device
        and step kind, and room for the tokens already cached."""
        kv, keys = cache["kv"], encoder_out["keys"][0]
        return (
            graph == self.graph
            and kv.shape[:4] == self.kv.shape[:4]
            and kv.shape[5] == self.kv.shape[5]
            and kv.dtype == self.kv.dtype
            and kv.device == self.kv.device
            and kv.size(4) < self.capacity
            and kv.size(2) == keys.size(0) * self.per_group
            and [k.shape for k in encoder_out["keys"]] == [k.shape for k, _ in self.shared]
        )

    def restart(self, encoder_out, cache) -> None:
        """Start a new decode (one that :meth:`fits`) in this state's tensors, where its graph reads them."""
        kv = cache["kv"]
        cached = kv.size(4)
        self.kv.narrow(4, 0, cached).copy_(kv)
        self.kv.narrow(4, cached, self.kv.size(4) - cached).zero_()  # as a new state's: nothing left over
        self.slots[0].fill_(cached)  # the mask token's slot, if any, stays the last
        self.tokens.fill_(self.decoder.mask_idx)
        for source, target in (
            ("lengths", self.lengths), ("padding", self.padding), ("positions", self.source_positions)
        ):  # fmt: skip
            target.copy_(encoder_out[source][0])
        for (shared_k, shared_v), k, v in zip(self.shared, encoder_out["keys"], encoder_out["values"]):
            shared_k.copy_(k)
            shared_v.copy_(v)
        self.source_keys = encoder_out["keys"][0]
        self.live = self.rows
        self.count = cached

    def forward(self) -> Tensor:
        """One step on this state's tensors alone (what the graph records): ``(B, V)`` logits."""
        with torch.profiler.record_function(STATIC_STEP_RANGE):
            return self._forward()

    def _forward(self) -> Tensor:
        count = self.slots[0]
        lengths = self.lengths.unsqueeze(1)
        positions = lengths + count + self.offsets  # B x fed
        key_positions = [self.source_positions, lengths + self.slot_range]
        filled = self.slot_range.le(count).expand(self.rows, self.fed, -1)  # the real token's slot too
        visible = [(~self.padding).unsqueeze(1).expand(-1, self.fed, -1), filled]
        if self.fed > 1:
            key_positions.append(positions[:, 1:])
            visible.append(self.own_slot.expand(self.rows, -1, -1))
        hidden, _ = self.decoder.transformer(
            self.tokens, self.segments, positions, torch.cat(visible, 2),
            prefix_positions=torch.cat(key_positions, 1), shared=self.shared, kv_slots=(self.kv, self.slots),
        )  # fmt: skip
        return self.decoder.lm_head(hidden[:, -1])

    def step(self, tokens: Tensor, encoder_out) -> Optional[Tensor]:
        """The next token's ``(live, V)`` logits, or None when the rows no longer fit (see the class)."""
        if encoder_out["keys"][0] is not self.source_keys and not self._take_sources(encoder_out):
            return None
        if self.source_keys.size(0) * self.per_group != self.live:  # rows left, every sentence still there
            return None
        if self.count == self.capacity:  # every slot filled: twice the slots, captured again
            grown = StaticDecodingStep(self.decoder, encoder_out, self.eager_cache(), self.graph)
            self.__dict__.update(grown.__dict__)
        self.tokens[: self.live, 0].copy_(tokens[:, -1])
        if self.graph:
            if self.cuda_graph is None:
                self._capture()
            self.cuda_graph.replay()
            logits = self.logits
        else:
            logits = self.forward()
        self.slots.add_(self.advance)
        self.count += 1
        return logits[: self.live]

    def _capture(self) -> None:
        """Record :meth:`forward` as a CUDA graph, after a warm-up run on a side stream.

        The warm-up writes what the first replay writes again (the same keys and values into the
        same slots), so it changes nothing that the replay reads.
        """
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                self.logits = self.forward()
        except RuntimeError as error:
            raise RuntimeError(
                f"capturing a decoding step as a CUDA graph failed ({error}); decode with --decoding-step "
                "static or eager instead"
            ) from error
        self.cuda_graph = graph

    def _take_sources(self, encoder_out) -> bool:
        """Copy the encoder's regathered source keys and values into the first groups of the shared ones."""
        keys = encoder_out["keys"][0]
        if keys.size(0) * self.per_group != self.live:
            return False  # not blocks of the beam size
        groups = keys.size(0)
        for (shared_k, shared_v), k, v in zip(self.shared, encoder_out["keys"], encoder_out["values"]):
            shared_k[:groups].copy_(k)
            shared_v[:groups].copy_(v)
        self.source_keys = keys
        return True

    def reorder(self, new_order: Tensor) -> bool:
        """Reorder the live rows (fairseq's ``new_order`` over them); False when it asks for more rows."""
        live = new_order.size(0)
        if live > self.live:
            return False
        filled = self.kv.narrow(4, 0, self.count)
        filled.narrow(2, 0, live).copy_(filled.index_select(2, new_order))
        for t in (self.lengths, self.padding, self.source_positions):  # as the encoder reorders its rows
            t[:live] = t.index_select(0, new_order)
        self.live = live
        return True

    def eager_cache(self, new_order: Optional[Tensor] = None) -> Dict[str, Tensor]:
        """The eager step's cache of the live rows (reordered by ``new_order`` when given)."""
        rows = torch.arange(self.live, device=self.kv.device) if new_order is None else new_order
        lengths = self.lengths.index_select(0, rows)
        return {
            "kv": self.kv.narrow(4, 0, self.count).index_select(2, rows),
            "key_positions": lengths.unsqueeze(1) + self.slot_range[: self.count],
            "next_position": lengths + self.count,
        }
