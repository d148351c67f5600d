"""How s2s-ft packs one (source, target) example into one sequence, per fine-tuning method.

The source is "[SOS] source [EOS]" (``S`` tokens) with the source segment and positions ``0..S-1``;
in the masked and pseudo-masked methods target token ``j`` (``j = 0..n-1``) has the target segment and
position ``S + j``. Every token on the target side, mask tokens ([M], [P]) included, has the target
segment. The segment ids are 0/1 (BERT's sentence A/B, s2s-ft's default), or 4/5 for a model
pre-trained by UniLM v1, whose seq2seq LM was trained with them (Dong et al. 2019 §2.1, §2.5; see
:func:`pretrained_segments`).

* ``causal`` (s2s-ft §2.1, Figure 1a; ``--mask_way v0``, "position shift", in the original
  s2s-ft code): the source segment is "[SOS] source" (``S - 1`` tokens, positions ``0..S-2``); the
  source's closing ``[EOS]`` (fairseq's ``eos``, ``[SEP]`` in BERT vocabularies) moves to the
  target side as the start token: target segment, position ``S - 1``, causal attention. Then come
  ``t_1 .. t_{n-1}`` (target segment, ``t_j`` at position ``S - 1 + j``); the last target token
  (``[EOS]``) is predicted but never fed. The output at the start token predicts ``t_1`` and the
  output at ``t_j`` predicts ``t_{j+1}``. This is the released s2s-ft code's layout: its training
  (``s2s-ft/s2s_ft/utils.py``, ``Seq2seqDatasetForBert`` with mask way ``v0``) packs "[CLS] source"
  (no [SEP]) with "[SEP] t_1 .. t_{n-1}", and its decoding (``s2s-ft/decode_seq2seq.py`` and
  ``s2s-ft/s2s_ft/s2s_loader.py`` with ``--pos_shift``) encodes "[CLS] source" and feeds ``[SEP]`` as
  the start token. Token ids and positions are those of the other methods' source followed by their
  targets; only the ``[EOS]`` changes side. UniLM v1's code lays causal fine-tuning out differently
  (``unilm-v1/src/biunilm/seq2seq_loader.py``, ``Preprocess4Seq2seq`` and ``Preprocess4Seq2seqDecoder``
  with ``pos_shift``): the source keeps its [SEP] and a separate start token, ``[S2S_SOS]`` (the
  vocabulary's ``[unused18]``, ``pytorch_pretrained_bert/tokenization.py``), follows it: "[CLS] source
  [SEP] [S2S_SOS] t_1 ..". The paper's Figure 1 caption also names a start token [SOS] besides [CLS]
  and [SEP] (s2s-ft §2.1). That layout is not offered here (docs/finetuning.md says why).
* ``masked``: ``[source | target inputs]`` with the seq2seq mask; the target
  inputs hold ``[M]`` (or a random or unchanged token) at the predicted
  positions, each predicted at its own position.
* ``pseudo_masked``: ``[source | target inputs | [P] x n]``; ``[P]`` ``j`` has
  target ``j``'s position and predicts ``t_j`` seeing the source and targets
  ``< j`` (:func:`unilm_fairseq.masks.pseudo_masked_seq2seq_mask`).

At inference masked and pseudo-masked decode the same way: the next position
holds a mask token that sees the source, the real tokens so far and itself. Causal
decoding encodes "[SOS] source", feeds the start token, then each chosen token.
"""

from contextlib import nullcontext
from dataclasses import dataclass
from enum import Enum
from typing import Dict, List, Tuple

import torch
from fairseq.data import data_utils
from fairseq.dataclass import ChoiceEnum
from fairseq.utils import safe_getattr
from omegaconf import DictConfig, open_dict
from torch import Tensor

from . import masks


class FinetuneMethod(str, Enum):
    """The s2s-ft fine-tuning method (``--finetune-method``; checkpoints record it as ``seq2seq_method``).

    Members compare equal to their plain string, which is what configs and checkpoints store;
    :class:`Seq2SeqSpec` turns a stored value into a member, once.
    """

    CAUSAL = "causal"
    MASKED = "masked"
    PSEUDO_MASKED = "pseudo_masked"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, Enum):  # a config's choice (fairseq's ChoiceEnum member)
            return cls(value.value)
        raise unknown_method(value)


def unknown_method(value) -> ValueError:
    """The error for a value that names no :class:`FinetuneMethod`."""
    return ValueError(
        f"unknown fine-tuning method {value!r}; expected one of {[m.value for m in FinetuneMethod]}"
    )


METHODS = tuple(FinetuneMethod)
# the type of the config fields that hold a method: plain strings, so --help lists the choices
METHOD_CHOICES = ChoiceEnum([m.value for m in FinetuneMethod])
# UniLM v1's segment ids double as LM identifiers (Dong et al. 2019 §2.1), numbered as in its release (a
# token-type vocabulary of 6): bidirectional A/B = 0/1, left-to-right 2, right-to-left 3, seq2seq 4/5.
# Its pre-training data (data/pretraining/unilm_objectives.py) lays them out; fine-tuning reads them here.
BIDIRECTIONAL, SEQ2SEQ, LEFT_TO_RIGHT, RIGHT_TO_LEFT = range(4)  # UniLM v1's LM objectives
UNILM_V1_SEGMENT_IDS = {BIDIRECTIONAL: (0, 1), LEFT_TO_RIGHT: (2, 2), RIGHT_TO_LEFT: (3, 3), SEQ2SEQ: (4, 5)}
UNILM_V1_NUM_SEGMENTS = 1 + max(max(ids) for ids in UNILM_V1_SEGMENT_IDS.values())
SOURCE_SEGMENT, TARGET_SEGMENT = 0, 1
PAIR_SEGMENTS = (SOURCE_SEGMENT, TARGET_SEGMENT)  # BERT's sentence A/B: s2s-ft's default
UNILM_V1_SEGMENTS = UNILM_V1_SEGMENT_IDS[SEQ2SEQ]  # (4, 5): UniLM v1's seq2seq LM (Dong et al. 2019 §2.1)
# the values of --seq2seq-segment-ids besides "auto"
SEGMENT_CHOICES = {"0-1": PAIR_SEGMENTS, "4-5": UNILM_V1_SEGMENTS}  # source-target


# the model-config fields that record a spec (every checkpoint of --task unilm_seq2seq holds them;
# older ones lack some, which then take the defaults below)
RECORD_FIELDS = (
    "seq2seq_method", "seq2seq_source_positions", "seq2seq_target_positions", "seq2seq_source_segment",
    "seq2seq_target_segment",
)  # fmt: skip


@dataclass(frozen=True)
class Seq2SeqSpec:
    """What s2s-ft fine-tuning and decoding agree on (Bao et al. 2021): the method, the source and target
    limits (``--max-source-positions``/``--max-target-positions``; 0 when none is known) and the source
    and target segment ids (0/1, or UniLM v1's 4/5, Dong et al. 2019 §2.1).

    ``--task unilm_seq2seq`` settles it once, from the command line or the checkpoint, and records it in
    the model's config (:meth:`record`); the model reads it back once (:meth:`recorded`) and hands the
    object to its decoder, the datasets, the hub and the export. The method is coerced here and nowhere else.
    """

    method: FinetuneMethod = FinetuneMethod.PSEUDO_MASKED
    max_source: int = 0
    max_target: int = 0
    segments: Tuple[int, int] = PAIR_SEGMENTS  # source, target

    def __post_init__(self):
        object.__setattr__(self, "method", FinetuneMethod(self.method))  # a clear error for an unknown one
        object.__setattr__(self, "max_source", int(self.max_source))
        object.__setattr__(self, "max_target", int(self.max_target))
        source, target = self.segments
        object.__setattr__(self, "segments", (int(source), int(target)))

    @property
    def causal(self) -> bool:
        return self.method == FinetuneMethod.CAUSAL

    @property
    def source_segment(self) -> int:
        return self.segments[0]

    @property
    def target_segment(self) -> int:
        return self.segments[1]

    @classmethod
    def recorded(cls, model_cfg) -> "Seq2SeqSpec":
        """The spec a model config records; a field an older checkpoint lacks takes its default."""
        method, source, target, source_segment, target_segment = (
            safe_getattr(model_cfg, name, None) for name in RECORD_FIELDS
        )
        return cls(
            FinetuneMethod.PSEUDO_MASKED if method is None else method,
            source or 0,
            target or 0,
            (
                SOURCE_SEGMENT if source_segment is None else source_segment,
                TARGET_SEGMENT if target_segment is None else target_segment,
            ),
        )

    @classmethod
    def from_checkpoint(cls, cfg) -> "Seq2SeqSpec":
        """The spec a saved checkpoint's config (``state["cfg"]``) holds: its model's record, where a
        checkpoint predating the recorded limits takes its task's (the limits it was fine-tuned with)."""
        spec = cls.recorded(cfg.model)
        return cls(
            spec.method,
            spec.max_source or safe_getattr(cfg.task, "max_source_positions", None) or 0,
            spec.max_target or safe_getattr(cfg.task, "max_target_positions", None) or 0,
            spec.segments,
        )

    def record(self, model_cfg) -> None:
        """Write the spec into a model config (plain strings and ints: what checkpoints can hold)."""
        values = (self.method.value, self.max_source, self.max_target, *self.segments)
        with open_dict(model_cfg) if isinstance(model_cfg, DictConfig) else nullcontext():
            for name, value in zip(RECORD_FIELDS, values):
                setattr(model_cfg, name, value)


def pretrained_segments(segment_rows: int) -> Tuple[int, int]:
    """Source and target segment ids for fine-tuning a checkpoint with ``segment_rows`` segment embeddings.

    UniLM v1's segment embeddings "play a role of LM identifier" (Dong et al. 2019 §2.1): six ids, the
    seq2seq LM's source and target being 4 and 5 (the numbering of the original release, see
    :mod:`unilm_fairseq.data.pretraining.unilm_objectives`), and seq2seq fine-tuning "is similar to
    pre-training" (§2.5), so a v1 model is fine-tuned and decodes with the ids of its seq2seq LM. The
    rule (this project's choice, for checkpoints that record no ids): a table of UniLM v1's six rows or
    more means v1 pre-training, so 4/5, as UniLM v1's code fine-tunes; any smaller table (BERT's two, one,
    or none) means 0/1, s2s-ft's default. The original s2s-ft code would take 0/1 for six rows too.
    """
    return UNILM_V1_SEGMENTS if segment_rows >= UNILM_V1_NUM_SEGMENTS else PAIR_SEGMENTS


def build_example(
    source: Tensor,
    target_inputs: Tensor,
    predict: Tensor,
    method: FinetuneMethod,
    mask_idx: int,
    segments: Tuple[int, int] = PAIR_SEGMENTS,
) -> Dict:
    """Lay out one example.

    Args:
        source: ``(S,)`` "[SOS] source [EOS]" (causal: its ``[EOS]`` becomes the start token).
        target_inputs: ``(T,)`` target-side inputs: the target itself (causal,
            pseudo-masked, possibly word-dropped) or the corrupted target (masked).
        predict: ``(T,)`` bool, target positions whose token is predicted
            (all of them except for the masked method).
        method: a :class:`FinetuneMethod` (a plain string of one compares equal).
        mask_idx: id of ``[M]``/``[P]``.
        segments: the source and the target segment id (0/1, or UniLM v1's 4/5).
    Returns:
        dict with ``tokens``, ``segments``, ``positions`` ``(L,)``, ``visible``
        ``(L, L)`` and ``query`` ``(L,)`` bool: where target ``j``'s prediction
        is read, in increasing ``j`` for the ``j`` with ``predict[j]``.
    """
    if method not in METHODS:
        raise unknown_method(method)
    if target_inputs.shape != predict.shape:
        raise ValueError(
            f"target_inputs {tuple(target_inputs.shape)} and predict {tuple(predict.shape)} differ in shape"
        )
    n_src, n_tgt = len(source), len(target_inputs)
    src_positions = torch.arange(n_src)
    tgt_positions = n_src + torch.arange(n_tgt)
    if method == FinetuneMethod.CAUSAL:
        if not bool(predict.all()):
            raise ValueError("the causal method predicts every target token")
        # s2s-ft §2.1, Figure 1a: the start token [EOS] (the source's last token) leads the target
        # side; it and t_1 .. t_{n-1} are fed, each predicting the next target token
        n_context = n_src - 1
        tokens = torch.cat([source, target_inputs[: n_tgt - 1]])
        positions = torch.arange(len(tokens))  # start token at S - 1, t_j at S - 1 + j
        visible = masks.seq2seq_mask(n_context, n_tgt)
        query = torch.zeros(len(tokens), dtype=torch.bool)
        query[n_context:] = True
    elif method == FinetuneMethod.MASKED:
        n_context = n_src
        tokens = torch.cat([source, target_inputs])
        positions = torch.cat([src_positions, tgt_positions])
        visible = masks.seq2seq_mask(n_src, n_tgt)
        query = torch.cat([torch.zeros(n_src, dtype=torch.bool), predict])
    else:
        n_context = n_src
        tokens = torch.cat([source, target_inputs, torch.full((n_tgt,), mask_idx, dtype=source.dtype)])
        positions = torch.cat([src_positions, tgt_positions, tgt_positions])
        visible = masks.pseudo_masked_seq2seq_mask(n_src, n_tgt)
        query = torch.cat([torch.zeros(n_src + n_tgt, dtype=torch.bool), predict])
    source_segment, target_segment = segments
    segment_ids = torch.full_like(tokens, target_segment)  # target side, mask tokens included
    segment_ids[:n_context] = source_segment
    return {
        "tokens": tokens,
        "segments": segment_ids,
        "positions": positions,
        "visible": visible,
        "query": query,
    }


def collate_examples(examples: List[Dict], pad: int, segment_pad: int = SOURCE_SEGMENT) -> Dict[str, Tensor]:
    """Right-pad laid-out examples into a batch: ``(B, L)`` tensors and ``(B, L, L)`` masks.

    The examples' ``visible`` masks go to ``attn_mask``, the model's argument of that name.
    Padding gets segment ``segment_pad`` (pass the source segment) and position 0; no query sees it.
    """
    return {
        "tokens": data_utils.collate_tokens([e["tokens"] for e in examples], pad),
        "segments": data_utils.collate_tokens([e["segments"] for e in examples], segment_pad),
        "positions": data_utils.collate_tokens([e["positions"] for e in examples], 0),
        "attn_mask": masks.pad_masks([e["visible"] for e in examples]),
        "masked_tokens": data_utils.collate_tokens([e["query"] for e in examples], False),
    }


def pair_segments(tokens: Tensor, eos: int, num_segments: int = 2) -> Tensor:
    """Segment ids of "[SOS] A [EOS] B [EOS]" sentence pairs.

    A token's segment is the number of ``eos`` tokens before it (not counting
    itself), capped at ``num_segments - 1``: the first sentence and its closing
    ``[EOS]`` get 0, everything after it 1. Padding gets whatever follows from
    the rule; its outputs are never read.

    Args:
        tokens: ``(B, T)`` long.
    Returns:
        ``(B, T)`` long.
    """
    is_eos = tokens.eq(eos).long()
    before = is_eos.cumsum(1) - is_eos
    return before.clamp(max=max(num_segments - 1, 0))
