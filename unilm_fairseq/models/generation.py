"""fairseq's encoder/decoder interface over the shared UniLM Transformer, for ``SequenceGenerator``.

The source encoder runs "[SOS] source [EOS]" once and keeps every layer's keys
and values. Each decoding step feeds the previous real token and (masked and
pseudo-masked methods) a mask token at the next position; the real token's
keys and values join the cache, the mask token's never do. Without an
incremental state the decoder recomputes the whole prefix for the next token
through the training layout (:mod:`unilm_fairseq.seq2seq_layout`).

Neither view owns parameters: both hold the model's Transformer and LM head
without registering them, so the state dict, ``.half()`` and ``.to()`` go
through the model alone.
"""

from typing import Dict, List, Optional

import torch
from fairseq.models import FairseqEncoder, FairseqIncrementalDecoder
from torch import Tensor

from .. import masks, seq2seq_layout


def _share(module, name, value):
    object.__setattr__(module, name, value)  # a reference, not a registered submodule


def source_positions(padding: Tensor) -> Tensor:
    """``(B, S)`` padding (either side) -> position ids ``0..n-1`` of the real tokens, 0 on padding."""
    return ((~padding).long().cumsum(1) - 1).clamp(min=0)


class UniLMSourceEncoder(FairseqEncoder):
    def __init__(self, dictionary, transformer, lm_head):
        super().__init__(dictionary)
        _share(self, "transformer", transformer)
        _share(self, "lm_head", lm_head)

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None, **unused):
        """
        Args:
            src_tokens: ``(B, S)`` "[SOS] source [EOS]", padded on either side.
        Returns:
            dict of lists: ``src_tokens``; per-layer ``keys``/``values`` ``(B, H, S, D)``;
            ``padding`` and ``positions`` ``(B, S)``; ``lengths`` ``(B,)``; ``last`` ``(B, C)``, the
            final-layer state of the last source token (it predicts the first
            target token in the causal method).
        """
        padding = src_tokens.eq(self.dictionary.pad())
        positions = source_positions(padding)
        segments = torch.full_like(src_tokens, seq2seq_layout.SOURCE_SEGMENT)
        visible = masks.padded_bidirectional_mask(padding)
        hidden, kv = self.transformer(src_tokens, segments, positions, visible)
        last_index = (positions * (~padding)).argmax(1)
        last = hidden[torch.arange(hidden.size(0), device=hidden.device), last_index]
        return {
            "src_tokens": [src_tokens],
            "keys": [k for k, _ in kv],
            "values": [v for _, v in kv],
            "padding": [padding],
            "positions": [positions],
            "lengths": [(~padding).long().sum(1)],
            "last": [last],
        }

    def reorder_encoder_out(self, encoder_out: Dict[str, List[Tensor]], new_order):
        return {key: [t.index_select(0, new_order) for t in ts] for key, ts in encoder_out.items()}


class UniLMIncrementalDecoder(FairseqIncrementalDecoder):
    def __init__(self, dictionary, transformer, lm_head, method: str):
        super().__init__(dictionary)
        _share(self, "transformer", transformer)
        _share(self, "lm_head", lm_head)
        self.method = method
        self.mask_idx = dictionary.index("<mask>")

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

    def _check_position(self, position: Tensor):
        limit = self.max_positions()
        if int(position.max()) >= limit:
            raise ValueError(
                f"decoding reached position {int(position.max())}, beyond the position table "
                f"(max_positions={limit}); lower --max-len-b or the source length"
            )

    def _step(self, tokens, encoder_out, incremental_state) -> Tensor:
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is None:  # first step: start from the source's keys and values
            cache = {f"k{i}": k for i, k in enumerate(encoder_out["keys"])}
            cache.update({f"v{i}": v for i, v in enumerate(encoder_out["values"])})
            cache["padding"] = encoder_out["padding"][0]
            cache["key_positions"] = encoder_out["positions"][0]
            cache["next_position"] = encoder_out["lengths"][0]
        step = tokens.size(1) - 1
        if self.method == "causal" and step == 0:
            return self.lm_head(encoder_out["last"][0])  # the source's [EOS] predicts t_1

        bsz = tokens.size(0)
        position = cache["next_position"]
        new_tokens, new_positions = [], []
        if step > 0:  # the token chosen last step becomes context
            new_tokens.append(tokens[:, -1])
            new_positions.append(position)
        if self.method != "causal":  # ask for the next token with a mask token
            new_tokens.append(torch.full_like(tokens[:, -1], self.mask_idx))
            new_positions.append(position + len(new_positions))
        x = torch.stack(new_tokens, 1)  # B x n (n = 1 or 2)
        positions = torch.stack(new_positions, 1)
        self._check_position(positions)
        n = x.size(1)
        # cached keys: every real one; new tokens: the real token sees itself, the mask token sees both
        prefix_visible = (~cache["padding"]).unsqueeze(1).expand(bsz, n, -1)
        new_visible = torch.ones(n, n, dtype=torch.bool, device=x.device).tril().expand(bsz, n, n)
        visible = torch.cat([prefix_visible, new_visible], 2)
        prefix = [(cache[f"k{i}"], cache[f"v{i}"]) for i in range(len(encoder_out["keys"]))]
        segments = torch.full_like(x, seq2seq_layout.TARGET_SEGMENT)
        hidden, kv = self.transformer(
            x, segments, positions, visible, prefix=prefix, prefix_positions=cache["key_positions"]
        )
        if step > 0:  # cache the real token only, never the mask token
            for i, (k, v) in enumerate(kv):
                cache[f"k{i}"] = torch.cat([cache[f"k{i}"], k[:, :, :1]], 2)
                cache[f"v{i}"] = torch.cat([cache[f"v{i}"], v[:, :, :1]], 2)
            cache["padding"] = torch.cat([cache["padding"], cache["padding"].new_zeros(bsz, 1)], 1)
            cache["key_positions"] = torch.cat([cache["key_positions"], position.unsqueeze(1)], 1)
            cache["next_position"] = position + 1
        self.set_incremental_state(incremental_state, "cache", cache)
        return self.lm_head(hidden[:, -1])

    def _recompute(self, tokens, encoder_out) -> Tensor:
        """The next token's logits from a full forward over source, prefix and query."""
        pad = self.dictionary.pad()
        src_tokens = encoder_out["src_tokens"][0]
        examples = []
        for source, generated in zip(src_tokens, tokens[:, 1:]):
            source = source[source.ne(pad)]
            # the last slot is the token being predicted: a mask token input, or (causal) not fed
            target = torch.cat([generated, generated.new_full((1,), self.mask_idx)])
            predict = torch.zeros(len(target), dtype=torch.bool, device=target.device)
            predict[-1] = True
            method = "causal" if self.method == "causal" else "masked"
            if method == "causal":
                predict[:] = True
            examples.append(seq2seq_layout.build_example(source, target, predict, method, self.mask_idx))
        batch = seq2seq_layout.collate_examples(examples, pad)
        batch = {k: v.to(tokens.device) for k, v in batch.items()}
        self._check_position(batch["positions"])
        hidden, _ = self.transformer(
            batch["tokens"], batch["segments"], batch["positions"], batch["attn_mask"]
        )
        # the last query of each row is the next token
        last_query = (
            batch["masked_tokens"].long() * torch.arange(hidden.size(1), device=hidden.device)
        ).argmax(1)
        return self.lm_head(hidden[torch.arange(hidden.size(0), device=hidden.device), last_query])

    def reorder_incremental_state(self, incremental_state, new_order):
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is not None:
            cache = {key: value.index_select(0, new_order) for key, value in cache.items()}
            self.set_incremental_state(incremental_state, "cache", cache)
