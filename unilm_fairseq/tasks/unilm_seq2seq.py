"""Task ``unilm_seq2seq``: s2s-ft fine-tuning and generation on fairseq language-pair data."""

import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
from fairseq import checkpoint_utils, utils
from fairseq.data import data_utils
from fairseq.dataclass import ChoiceEnum
from fairseq.sequence_scorer import SequenceScorer
from fairseq.tasks import register_task
from omegaconf import II, MISSING

from .. import seq2seq_layout
from ..checkpoint.unilmv2_init import checkpoint_seq2seq_segments, load_pretrained_weights
from ..data.masking import MaskingConfig
from ..data.seq2seq.scoring import average_over_models, scoring_dataset, target_log_probs
from ..data.seq2seq.seq2seq_dataset import SOURCE_SPECIALS, TARGET_SPECIALS, Seq2SeqDataset
from ..data.shard_check import check_binarized_split
from ..models.generation import STEP_MODES, check_decoding_positions, last_decoding_position
from ..models.unilmv2 import check_seq2seq_segments
from ..seq2seq_layout import Seq2SeqSpec
from .decoding_conventions import (
    DecodingConventionsConfig,
    DecodingConventionsTask,
    check_min_len_fits,
    constrained_search_limit,
    search_sample,
)
from .mixed_precision import MixedPrecisionConfig
from .rouge_validation import RougeValidationConfig, RougeValidationTask
from .shared_dictionary import SharedDictionaryTask, check_max_tokens

logger = logging.getLogger(__name__)

# the limits when neither the command line nor a fine-tuned checkpoint gives them (this project's choice)
DEFAULT_MAX_SOURCE, DEFAULT_MAX_TARGET = 448, 64
LIMITS = ("max_source_positions", "max_target_positions")
AUTO = "auto"


@dataclass
class UniLMSeq2SeqConfig(DecodingConventionsConfig, RougeValidationConfig, MixedPrecisionConfig):
    data: str = field(
        default=MISSING,
        metadata={"help": "data directory from fairseq-preprocess with a joined (or shared) dictionary"},
    )
    source_lang: Optional[str] = field(
        default=None, metadata={"help": "source language suffix (inferred from the files when unset)"}
    )
    target_lang: Optional[str] = field(
        default=None, metadata={"help": "target language suffix (inferred from the files when unset)"}
    )
    finetune_method: seq2seq_layout.METHOD_CHOICES = field(
        default=seq2seq_layout.FinetuneMethod.PSEUDO_MASKED.value,
        metadata={
            "help": "s2s-ft method: causal (next-token), masked (predict [M] targets) or pseudo_masked; "
            "training only: generation decodes with the method the checkpoint records"
        },
    )
    target_mask_prob: float = field(
        default=0.5, metadata={"help": "masked method: fraction of target tokens predicted per example"}
    )
    target_word_drop_prob: float = field(
        default=0.0,
        metadata={
            "help": "pseudo-masked and causal methods: fraction of the fed target tokens (causal: not the "
            "start token) corrupted 80/10/10 ([M]/random/unchanged); the predictions stay the original "
            "tokens. s2s-ft's --target_mask_prob for these methods (its causal training defaults to 0.5)"
        },
    )
    leave_unmasked_prob: float = field(
        default=MaskingConfig.leave_unmasked_prob,
        metadata={"help": "masked method: predicted targets whose input is left unchanged"},
    )
    random_token_prob: float = field(
        default=MaskingConfig.random_token_prob,
        metadata={"help": "masked method: predicted targets whose input is a random token"},
    )
    max_source_positions: Optional[int] = field(
        default=None,
        metadata={"help": f"source limit, [SOS] and [EOS] included; longer sources are truncated (training: "
                  f"{DEFAULT_MAX_SOURCE}; generation: the fine-tuned checkpoint's)"},
    )  # fmt: skip
    max_target_positions: Optional[int] = field(
        default=None,
        metadata={"help": f"target limit, [EOS] included; longer targets are truncated (training: "
                  f"{DEFAULT_MAX_TARGET}; generation: the fine-tuned checkpoint's)"},
    )  # fmt: skip
    pretrained_checkpoint: Optional[str] = field(
        default=None,
        metadata={"help": "initialise from this unilmv2 checkpoint (pre-trained or converted); the position "
                  "table is tiled when the fine-tuning length needs more rows"},
    )  # fmt: skip
    seq2seq_segment_ids: ChoiceEnum([AUTO, *seq2seq_layout.SEGMENT_CHOICES]) = field(
        default=AUTO,
        metadata={"help": "segment ids source-target (the target's [M]/[P] included): 0-1 (BERT's sentence "
                  "A/B) or 4-5 (UniLM v1's seq2seq LM identifiers, Dong et al. 2019 §2.1). auto: when "
                  "training, the ids --pretrained-checkpoint records (fine-tuned here, or converted from a "
                  "config.json with source_type_id/target_type_id); where it records none, 4-5 if it has "
                  "UniLM v1's 6 segment embeddings, else 0-1; when generating, the ids the checkpoint "
                  "records. Given for generation, it overrides the checkpoint's (with a warning)"},
    )  # fmt: skip
    decoding_step: ChoiceEnum(STEP_MODES) = field(
        default="eager",
        metadata={"help": "how cached decoding steps run: eager (shaped by the cache so far); static "
                  "(fixed shapes over a preallocated cache); cuda_graph (static steps replayed from a CUDA "
                  "graph: a few host calls per step instead of hundreds; eager on a CPU). The same sums up "
                  "to the order of their float additions: scores agree to rounding"},
    )  # fmt: skip
    seed: int = II("common.seed")


def match_source_lengths(sample: dict):
    """The batch for a ``--match-source-len`` search, and its last step.

    fairseq's generator takes the output length from ``net_input["src_lengths"]``. A translation source
    counts its words and its ``</s>``; ours also holds ``[SOS]``, which is left out here, so an output is
    as long as fairseq's translation models make it for the same words."""
    net_input = dict(sample["net_input"], src_lengths=sample["net_input"]["src_lengths"] - 1)
    return dict(sample, net_input=net_input), int(net_input["src_lengths"].max())


@register_task("unilm_seq2seq", dataclass=UniLMSeq2SeqConfig)
class UniLMSeq2SeqTask(RougeValidationTask, DecodingConventionsTask, SharedDictionaryTask):
    """Fine-tune a bidirectional Transformer for generation with s2s-ft (Bao et al. 2021)."""

    default_criterion = "unilm_seq2seq"

    cfg: UniLMSeq2SeqConfig

    def __init__(self, cfg: UniLMSeq2SeqConfig, dictionary):
        super().__init__(cfg, dictionary)
        # limits left unset come from the checkpoint when one is loaded for generation
        self.limits_given = {name: getattr(cfg, name) is not None for name in LIMITS}
        # at least one token besides the specials: [SOS] and [EOS] in the source, [EOS] in the target
        for name, least in zip(LIMITS, (SOURCE_SPECIALS + 1, TARGET_SPECIALS + 1)):
            given = getattr(cfg, name)
            if given is not None and given < least:
                specials = "[SOS] and [EOS]" if name == LIMITS[0] else "[EOS]"
                raise ValueError(
                    f"--{name.replace('_', '-')} {given}: at least {least}, with room for one token beside "
                    f"the {specials}"
                )
        for name, default in zip(LIMITS, (DEFAULT_MAX_SOURCE, DEFAULT_MAX_TARGET)):
            if getattr(cfg, name) is None:
                setattr(cfg, name, default)
        # settled when first needed: fairseq-train loads the valid split before building the model,
        # generation builds the model from its checkpoint (which settles it) first
        self._spec: Optional[Seq2SeqSpec] = None
        # --pretrained-checkpoint, read once: for its segment ids, then for its weights
        self._pretrained_state: Optional[dict] = None

    @classmethod
    def setup_task(cls, cfg: UniLMSeq2SeqConfig, **kwargs):
        paths = cls.data_paths(cfg.data)
        if cfg.source_lang is None or cfg.target_lang is None:
            cfg.source_lang, cfg.target_lang = data_utils.infer_language_pair(paths[0])
        if cfg.source_lang is None:
            raise FileNotFoundError(f"could not infer the language pair from the files in {paths[0]}")
        src_dict = cls.load_dictionary(os.path.join(paths[0], f"dict.{cfg.source_lang}.txt"))
        tgt_dict = cls.load_dictionary(os.path.join(paths[0], f"dict.{cfg.target_lang}.txt"))
        if src_dict.symbols != tgt_dict.symbols:
            raise ValueError(
                f"dict.{cfg.source_lang}.txt and dict.{cfg.target_lang}.txt differ: source and target share "
                "one embedding table, so binarize with --joined-dictionary (or the same --srcdict/--tgtdict)"
            )
        logger.info("dictionary: %d types", len(src_dict))
        return cls(cfg, src_dict)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        paths = self.data_paths(self.cfg.data)
        data_path = paths[(epoch - 1) % len(paths)]
        src_lang, tgt_lang = self.cfg.source_lang, self.cfg.target_lang
        prefix = os.path.join(data_path, f"{split}.{src_lang}-{tgt_lang}.")
        for side in (src_lang, tgt_lang):  # a cut file stops here, named, not in a data loader's worker
            check_binarized_split(prefix + side)
        src = data_utils.load_indexed_dataset(prefix + src_lang, self.dictionary, combine=combine)
        tgt = data_utils.load_indexed_dataset(prefix + tgt_lang, self.dictionary, combine=combine)
        if src is None or tgt is None:
            raise FileNotFoundError(f"dataset not found: {split} ({prefix}{src_lang} / {prefix}{tgt_lang})")
        if len(src) != len(tgt):
            raise ValueError(f"{split}: {len(src)} source lines but {len(tgt)} target lines")
        src_sizes, tgt_sizes = np.asarray(src.sizes), np.asarray(tgt.sizes)
        empty = (src_sizes <= 1) | (tgt_sizes <= 1)  # just the </s> fairseq-preprocess appends
        keep = np.flatnonzero(~empty)
        # lines end with </s>: the source gains [SOS], the target keeps its </s> as [EOS]
        spec = self.seq2seq_spec
        long_src = int((src_sizes[keep] - 1 > spec.max_source - SOURCE_SPECIALS).sum())
        long_tgt = int((tgt_sizes[keep] - 1 > spec.max_target - TARGET_SPECIALS).sum())
        logger.info(
            "%s: %d pairs; skipped %d with an empty source or target; truncated %d sources to "
            "--max-source-positions %d and %d targets to --max-target-positions %d",
            split, len(src), int(empty.sum()), long_src, spec.max_source, long_tgt, spec.max_target,
        )  # fmt: skip
        if len(keep) == 0:  # fairseq's batching or validation would fail later, far from the cause
            raise ValueError(f"{split}: no pair left to use: all {len(src)} have an empty source or target")
        self.datasets[split] = self._dataset(src, tgt, keep)
        return self.datasets[split]

    def _dataset(self, src, tgt, indices=None, constraints=None):
        return Seq2SeqDataset(
            src, tgt, self.dictionary, self.seq2seq_spec, seed=self.cfg.seed, indices=indices,
            target_mask_prob=self.cfg.target_mask_prob, word_drop_prob=self.cfg.target_word_drop_prob,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob, random_token_prob=self.cfg.random_token_prob,
            constraints=constraints,
        )  # fmt: skip

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """Sources for ``fairseq-interactive`` and the Python API (each ends with ``</s>``), with
        ``constraints`` (``(N, L)`` packed, ``--constraints``) for a lexically constrained search."""
        max_source = self.seq2seq_spec.max_source
        too_long = sum(int(n) - 1 > max_source - SOURCE_SPECIALS for n in src_lengths)
        if too_long:
            logger.warning(
                "truncated %d of %d inputs to --max-source-positions %d",
                too_long, len(src_lengths), max_source,
            )  # fmt: skip
        return self._dataset(_TokenList(src_tokens), None, constraints=constraints)

    @property
    def seq2seq_spec(self) -> Seq2SeqSpec:
        """The s2s-ft spec this task lays out and decodes with, settled once (:meth:`_settle`): from the
        command line (and ``--pretrained-checkpoint``) until a checkpoint is loaded for generation."""
        if self._spec is None:
            self._settle()
        return self._spec

    def _settle(self, model_cfg=None) -> Seq2SeqSpec:
        """The one resolver of the method, the limits and the segment ids.

        Without ``model_cfg`` (training): ``--finetune-method``, the limits given (else
        :data:`DEFAULT_MAX_SOURCE`/:data:`DEFAULT_MAX_TARGET`), and the segment ids of
        ``--seq2seq-segment-ids``, else those ``--pretrained-checkpoint`` records or implies, else 0/1.
        With the model config of a checkpoint loaded for generation: the method it records; each limit
        given on the command line, else recorded, else as before; the segment ids it records (0/1 when it
        predates them) unless ``--seq2seq-segment-ids`` names others, with a warning. The spec is recorded
        in ``model_cfg``, which the model reads it from.
        """
        choice = str(self.cfg.seq2seq_segment_ids)
        if model_cfg is None:
            segments, reason = self._training_segments(choice)
            limits = self.cfg.max_source_positions, self.cfg.max_target_positions
            spec = Seq2SeqSpec(self.cfg.finetune_method, *limits, segments)
            logger.info("seq2seq segment ids: source %d, target %d (%s)", *segments, reason)
        else:
            recorded = Seq2SeqSpec.recorded(model_cfg)
            if recorded.method.value != str(self.cfg.finetune_method):
                logger.info("decoding with the checkpoint's method %s", recorded.method)
            limits, taken = [], []
            for name, value in zip(LIMITS, (recorded.max_source, recorded.max_target)):
                take = bool(value) and not self.limits_given[name]  # 0: the checkpoint records none
                if take:
                    taken.append(f"--{name.replace('_', '-')} {value}")
                limits.append(value if take else getattr(self.cfg, name))
            if taken:
                logger.info("using %s from the checkpoint", " and ".join(taken))
            segments = recorded.segments
            if choice == AUTO or seq2seq_layout.SEGMENT_CHOICES[choice] == segments:
                logger.info("seq2seq segment ids: source %d, target %d (from the checkpoint)", *segments)
            else:
                segments = seq2seq_layout.SEGMENT_CHOICES[choice]
                logger.warning(
                    "--seq2seq-segment-ids %s: decoding with segment ids %s, not the checkpoint's %s",
                    choice, segments, recorded.segments,
                )  # fmt: skip
            spec = Seq2SeqSpec(recorded.method, *limits, segments)
            spec.record(model_cfg)
        self._spec = spec
        self.cfg.max_source_positions, self.cfg.max_target_positions = spec.max_source, spec.max_target
        return spec

    def _training_segments(self, choice: str) -> Tuple[Tuple[int, int], str]:
        if choice != AUTO:
            return seq2seq_layout.SEGMENT_CHOICES[choice], f"--seq2seq-segment-ids {choice}"
        if self.cfg.pretrained_checkpoint:
            path = self.cfg.pretrained_checkpoint
            if self._pretrained_state is None:
                self._pretrained_state = checkpoint_utils.load_checkpoint_to_cpu(path)
            return checkpoint_seq2seq_segments(path, self._pretrained_state)
        # nothing pre-trained to match (this project's choice)
        return seq2seq_layout.PAIR_SEGMENTS, "no --pretrained-checkpoint"

    def build_prepared_model(self, cfg, from_checkpoint=False):
        if from_checkpoint:
            spec = self._settle(cfg)
        else:
            spec = self.seq2seq_spec
            spec.record(cfg)  # plain strings and ints in the checkpoint
            needed = spec.max_source + spec.max_target
            if cfg.max_positions < needed:
                logger.info(
                    "position table grows from %d to %d rows (--max-source-positions %d + "
                    "--max-target-positions %d)",
                    cfg.max_positions, needed, spec.max_source, spec.max_target,
                )  # fmt: skip
                cfg.max_positions = needed
        check_seq2seq_segments(spec.segments, cfg.num_segments)
        model = super().build_prepared_model(cfg, from_checkpoint)
        if self.cfg.pretrained_checkpoint and not from_checkpoint:
            state, self._pretrained_state = self._pretrained_state, None  # read at most once
            load_pretrained_weights(model, self.cfg.pretrained_checkpoint, state)
        return model

    def build_generator(self, models, args, *more, **kwargs):
        if getattr(args, "print_alignment", None):  # fairseq's aligning generator reads cross-attention
            raise ValueError(
                "--print-alignment: a unilm_seq2seq model has no encoder-decoder attention to align with, "
                "and its decoding steps run fused attention, which returns no weights (palm_seq2seq models "
                "print alignments)"
            )
        return super().build_generator(models, args, *more, **kwargs)

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """Generate, keeping every decoding position inside the position table.

        The cap and the check use shapes and options only, so decoding reads no position back from
        the device: the decoder does not check positions itself. ``fairseq-generate --score-reference``
        scores the references instead (:meth:`score_references`).
        """
        if isinstance(generator, SequenceScorer):
            return self.score_references(models, sample)
        src_len = sample["net_input"]["src_tokens"].size(1)
        table = min(m.max_decoder_positions() for m in models)
        room = table - src_len
        if not hasattr(generator, "requested_max_len"):
            generator.requested_max_len = generator.max_len
        generator.max_len = min(generator.requested_max_len, room)
        wanted = int(generator.max_len_a * src_len + generator.max_len_b)
        remedy = None
        if getattr(generator, "match_source_len", False):  # fairseq then ignores max_len: no cap
            sample, steps = match_source_lengths(sample)
            remedy = (
                f"--match-source-len: sources of up to {steps} tokens ask for as many output tokens; shorten "
                "the sources or drop --match-source-len"
            )
        else:
            if wanted > generator.max_len - 1:
                logger.warning(
                    "generation capped at %d tokens (asked for %d): sources of %d tokens leave %d rows of "
                    "the position table", generator.max_len - 1, wanted, src_len, room,
                )  # fmt: skip
            steps = min(wanted, generator.max_len - 1)  # the generator's last step
        for model in models:
            last = last_decoding_position(model.seq2seq_spec.method, src_len, steps)
            check_decoding_positions(last, table, remedy)
        check_min_len_fits(generator.min_len, steps, src_len)  # after: a too-long source says so first
        step_mode = getattr(self.cfg, "decoding_step", "eager")  # configs saved before the field lack it
        for model in models:
            model.decoder.step_mode = step_mode
        with constrained_search_limit(generator, constraints):
            return generator.generate(
                models, search_sample(generator, sample), prefix_tokens=prefix_tokens, constraints=constraints
            )

    def score_references(self, models, sample) -> List[List[Dict]]:
        """Each reference of a batch scored, in the form of fairseq's ``SequenceScorer``.

        fairseq's scorer runs a decoder over the whole reference, which a UniLM model does not have; the
        log-probabilities here are read from the scoring layout of each model's method
        (:mod:`unilm_fairseq.data.seq2seq.scoring`), which are the ones decoding gives the same tokens.
        An ensemble's probabilities are averaged. Per sentence, one entry: ``tokens`` (the reference,
        ``</s>`` included), ``positional_scores``, ``score`` (their mean), ``attention`` and
        ``alignment`` (None).
        """
        pad, limits = self.source_dictionary.pad(), self.seq2seq_spec
        # the batch's sources are "[SOS] source [EOS]" (truncated), the dataset's lines "source </s>"
        sources = [row[row.ne(pad)][1:].cpu() for row in sample["net_input"]["src_tokens"]]
        targets = [row[row.ne(pad)].cpu() for row in sample["target"]]
        device = sample["target"].device
        per_model = []
        for model in models:
            dataset = scoring_dataset(model.seq2seq_spec, limits, self.source_dictionary, sources, targets)
            batch = dataset.collater([dataset[i] for i in range(len(dataset))])
            with torch.no_grad():
                per_model.append(
                    target_log_probs(model, utils.apply_to_sample(lambda t: t.to(device), batch))
                )
        return [
            [{"tokens": target.to(device), "score": scores.mean(), "attention": None, "alignment": None,
              "positional_scores": scores}]
            for target, scores in zip(targets, average_over_models(per_model))
        ]  # fmt: skip

    def get_batch_iterator(self, dataset, max_tokens=None, **kwargs):
        pseudo_masked = seq2seq_layout.FinetuneMethod.PSEUDO_MASKED
        if isinstance(dataset, Seq2SeqDataset) and dataset.spec.method == pseudo_masked:
            packed = "a pseudo-masked example holds its source, its target and a pseudo token per target word"
            check_max_tokens(dataset, max_tokens, packed)
        return super().get_batch_iterator(dataset, max_tokens=max_tokens, **kwargs)

    def max_positions(self):
        return self.cfg.max_source_positions + self.cfg.max_target_positions


class _TokenList:
    """The indexed-dataset interface over in-memory token tensors (each ending with ``</s>``)."""

    def __init__(self, tensors):
        self.tensors = list(tensors)
        self.sizes = np.array([len(t) for t in self.tensors])

    def __getitem__(self, index):
        return self.tensors[index]

    def __len__(self):
        return len(self.tensors)
