"""What the plugin's tasks share: one dictionary for source and target, with ``<mask>``."""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq import utils
from fairseq.data import TokenBlockDataset, data_utils
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import FairseqTask
from omegaconf import II, MISSING

from ..data.dictionary import load_dictionary_with_mask
from ..data.pretraining.segment_pairs import SPECIAL_TOKENS_PER_PAIR
from ..data.shard_check import check_binarized_split
from .mixed_precision import MixedPrecisionConfig, MixedPrecisionTask
from .prepared_model import PreparedModelTask

logger = logging.getLogger(__name__)


@dataclass
class TextBlocksConfig(MixedPrecisionConfig):
    """Options of the pre-training tasks that cut monolingual text into blocks (``pmlm``, ``unilm``)."""

    data: str = field(
        default=MISSING,
        metadata={
            "help": "colon-separated data directories from fairseq-preprocess --only-source (empty lines "
            "separate documents); one is used per epoch, round-robin"
        },
    )
    sample_break_mode: ChoiceEnum(["none", "complete", "complete_doc"]) = field(
        default="complete_doc",
        metadata={
            "help": "how blocks are cut: 'none' fills blocks regardless of sentences, 'complete' keeps "
            "whole sentences, 'complete_doc' also stops at documents (empty lines)"
        },
    )
    tokens_per_sample: int = field(
        default=512, metadata={"help": "longest example, [SOS] and [EOS] tokens included"}
    )
    seed: int = II("common.seed")


DOCUMENT_SEP_LEN = 1  # an empty line binarizes to its eos alone


def text_blocks(lines, dictionary, cfg: TextBlocksConfig):
    """Cut binarized lines into blocks that leave room for "[SOS] A [EOS] B [EOS]".

    Returns the ``TokenBlockDataset`` and the block size (``--tokens-per-sample`` minus the pair's
    special tokens); a size below one token is a clear error.
    """
    block_size = cfg.tokens_per_sample - SPECIAL_TOKENS_PER_PAIR
    if block_size < 1:
        raise ValueError(f"--tokens-per-sample {cfg.tokens_per_sample} leaves no room for text")
    blocks = TokenBlockDataset(
        lines,
        lines.sizes,
        block_size,
        pad=dictionary.pad(),
        eos=dictionary.eos(),
        break_mode=cfg.sample_break_mode,
        document_sep_len=DOCUMENT_SEP_LEN,
    )
    return blocks, block_size


def check_max_tokens(dataset, max_tokens: Optional[int], packed: str) -> None:
    """An error naming ``--max-tokens`` when the longest packed example of ``dataset`` (its
    ``num_tokens``, which may exceed the positions it uses) is longer: fairseq's batching would assert
    without naming an option. ``packed`` says what an example holds."""
    if max_tokens is None or not len(dataset):
        return
    most = int(dataset.num_tokens_vec(np.arange(len(dataset))).max())
    if most > max_tokens:
        raise ValueError(
            f"--max-tokens {max_tokens} is less than the {most} tokens of the longest example: {packed}; use "
            f"--max-tokens {most} or more"
        )


class SharedDictionaryTask(PreparedModelTask, MixedPrecisionTask, FairseqTask):
    """Base of tasks whose inputs and outputs use one dictionary (one embedding table); ``--amp-bf16``
    where the task's config has it (:class:`MixedPrecisionConfig`)."""

    # the criterion that goes with the task: used when a checkpoint names none (the checkpoint
    # importer's output), so ``fairseq-validate`` can score a converted model before any training
    default_criterion: Optional[str] = None

    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    def build_criterion(self, cfg, from_checkpoint=False):
        if cfg is None and self.default_criterion is not None:
            logger.info("the checkpoint names no criterion: using %s, the task's own", self.default_criterion)
            cfg = self.default_criterion
        return super().build_criterion(cfg, from_checkpoint)

    @classmethod
    def load_dictionary(cls, filename):
        return load_dictionary_with_mask(filename)

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        """Load ``dict.txt`` from the first data directory."""
        dictionary = cls.load_dictionary(os.path.join(cls.data_paths(cfg.data)[0], "dict.txt"))
        logger.info("dictionary: %d types", len(dictionary))
        return cls(cfg, dictionary)

    def load_lines(self, split: str, epoch: int = 1, combine: bool = False):
        """The binarized lines of ``split``, from one data directory per epoch (round-robin)."""
        paths = self.data_paths(self.cfg.data)
        split_path = os.path.join(paths[(epoch - 1) % len(paths)], split)
        check_binarized_split(split_path)  # a corrupt shard stops here, named, not in a data loader
        lines = data_utils.load_indexed_dataset(split_path, self.dictionary, combine=combine)
        if lines is None:
            raise FileNotFoundError(f"dataset not found: {split} ({split_path})")
        if not (np.asarray(lines.sizes) > 1).any():  # each line ends with the </s> fairseq-preprocess adds
            raise ValueError(f"{split} ({split_path}): no text, only {len(lines)} empty lines")
        return lines

    @staticmethod
    def data_paths(data: str):
        paths = utils.split_paths(data)
        if not paths:
            raise ValueError("--data (the task's DATA argument) is empty")
        return paths

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary


class TextBlocksTask(SharedDictionaryTask):
    """Base of the tasks that read :class:`TextBlocksConfig`: nearly every block is ``--tokens-per-sample``
    long, so a batching limit below it would skip nearly all of them; that is an error before any batch."""

    def get_batch_iterator(self, dataset, max_tokens=None, max_sentences=None, max_positions=None, **kwargs):
        # fairseq passes the smallest of the task's, the model's and --max-tokens' limits
        longest = self.cfg.tokens_per_sample
        if isinstance(max_positions, int) and max_positions < longest:
            raise ValueError(
                f"--tokens-per-sample {longest} is longer than the {max_positions} tokens a sample may have "
                f"here (the smallest of the model's --max-positions and --max-tokens {max_tokens}): nearly "
                f"every block would be skipped; use --tokens-per-sample {max_positions} or less"
            )
        return super().get_batch_iterator(
            dataset, max_tokens=max_tokens, max_sentences=max_sentences, max_positions=max_positions, **kwargs
        )
