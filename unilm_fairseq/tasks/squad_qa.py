"""Task ``squad_qa``: extractive question answering (SQuAD v1.1 / v2.0) with a span head.

``DATA`` holds ``dict.txt`` (a fairseq dictionary or a BERT ``vocab.txt``) and the official JSON files:
``{split}.json``, or ``train-v1.1.json``/``dev-v1.1.json`` (``train-v2.0.json``/``dev-v2.0.json``) for
``train``/``valid``. The task tokenizes them itself, keeping each token's character span, so predicted
answers are cut from the original passage (``scripts/predict_squad.py``).
"""

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from omegaconf import MISSING

from ..checkpoint.unilmv2_init import load_pretrained_weights
from ..encoders.wordpiece_tokenizer import casing_choice
from ..modules.heads import ANSWERABILITY_CLASSES
from ..qa.offset_tokenizers import SentencePieceOffsets, WordPieceOffsets, words_tokenizer
from ..qa.squad_dataset import SquadWindowDataset, tokenize_examples
from ..qa.squad_examples import SPECIALS_PER_WINDOW, read_squad_examples
from .mixed_precision import MixedPrecisionConfig
from .shared_dictionary import SharedDictionaryTask

logger = logging.getLogger(__name__)

TOKENIZERS = ("wordpiece", "sentencepiece", "words")
# file names of the official releases, tried after "{split}.json"
OFFICIAL_NAMES = {
    "train": ("train-v1.1.json", "train-v2.0.json"),
    "valid": ("dev-v1.1.json", "dev-v2.0.json"),
}


@dataclass
class SquadQAConfig(MixedPrecisionConfig):
    data: str = field(
        default=MISSING, metadata={"help": "directory with dict.txt and the SQuAD JSON files of each split"}
    )
    qa_tokenizer: ChoiceEnum(TOKENIZERS) = field(
        default="wordpiece",
        metadata={
            "help": "wordpiece: BERT basic tokens split into the dictionary's WordPiece pieces (## marks "
            "a continuation); sentencepiece: those tokens encoded by --qa-sentencepiece-model; words: BERT "
            "basic tokens (words and punctuation marks) as they are"
        },
    )
    qa_sentencepiece_model: Optional[str] = field(
        default=None, metadata={"help": "sentencepiece model for --qa-tokenizer sentencepiece (pass --cased "
                                        "for a cased model)"},
    )  # fmt: skip
    cased: bool = field(
        default=False,
        metadata={"help": "keep case and accents; by default wordpiece follows the dictionary (cased when it "
                  "has entries with cased letters), the other tokenizers lowercase and strip accents"},
    )  # fmt: skip
    lowercase: bool = field(
        default=False, metadata={"help": "lowercase and strip accents whatever the dictionary (see --cased)"}
    )
    max_seq_length: int = field(
        default=384, metadata={"help": "tokens per window: [SOS] question [EOS] passage window [EOS]"}
    )
    doc_stride: int = field(
        default=128, metadata={"help": "passage tokens between the starts of consecutive windows"}
    )
    max_query_length: int = field(
        default=64, metadata={"help": "questions longer than this many tokens are truncated (counted)"}
    )
    span_head_name: str = field(default="squad_span_head", metadata={"help": "name of the span head"})
    answerability_head: bool = field(
        default=False,
        metadata={"help": "add UniLMv2's answerability classifier (§4.2, SQuAD v2.0): a 2-way classifier on "
                  "the [SOS] vector that predicts whether the window holds no answer, trained with the span "
                  "loss (criterion squad_span, --answerability-weight); scripts/predict_squad.py then "
                  "answers '' by its probability instead of the null-span rule"},
    )  # fmt: skip
    answerability_head_name: str = field(
        default="squad_answerability_head",
        metadata={"help": "name of the answerability classifier (a classification head)"},
    )
    pretrained_checkpoint: Optional[str] = field(
        default=None,
        metadata={"help": "initialise from this unilmv2 checkpoint (pre-trained or converted); the span "
                  "head starts fresh"},
    )  # fmt: skip


@register_task("squad_qa", dataclass=SquadQAConfig)
class SquadQATask(SharedDictionaryTask):
    """Predict the start and end of the answer in each window of "[SOS] question [EOS] passage [EOS]"."""

    cfg: SquadQAConfig

    @classmethod
    def setup_task(cls, cfg: SquadQAConfig, **kwargs):
        if cfg.max_seq_length - cfg.max_query_length - SPECIALS_PER_WINDOW < 1:
            raise ValueError(
                f"--max-seq-length {cfg.max_seq_length} leaves no room for the passage after a question of "
                f"--max-query-length {cfg.max_query_length} tokens and {SPECIALS_PER_WINDOW} special tokens"
            )
        return super().setup_task(cfg, **kwargs)

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary)
        choice = casing_choice(cfg.cased, cfg.lowercase)
        lowercase = choice is not False
        if cfg.qa_tokenizer == "wordpiece":
            self.tokenize = WordPieceOffsets(dictionary.symbols, choice)
        elif cfg.qa_tokenizer == "sentencepiece":
            model = cfg.qa_sentencepiece_model
            if not model or not os.path.isfile(model):
                raise FileNotFoundError(
                    f"--qa-tokenizer sentencepiece needs --qa-sentencepiece-model (got {model!r})"
                )
            self.tokenize = SentencePieceOffsets(model, lowercase)
        else:
            self.tokenize = words_tokenizer(lowercase)

    def split_file(self, split: str) -> str:
        folder = self.data_paths(self.cfg.data)[0]
        for name in (f"{split}.json", *OFFICIAL_NAMES.get(split, ())):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                return path
        raise FileNotFoundError(f"no SQuAD file for split {split!r} in {folder} ({split}.json)")

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        self.datasets[split] = self.load_squad(self.split_file(split), training=True)
        return self.datasets[split]

    def load_squad(self, path: str, training: bool) -> SquadWindowDataset:
        """Windows of every question in a SQuAD JSON file; skips and truncations are counted and logged.

        ``training``: also skip answerable questions whose answer span cannot be located (inference
        keeps them: they are still answered).
        """
        stats = Counter()
        examples = read_squad_examples(path, stats)
        tokenized, windows = tokenize_examples(
            examples, self.tokenize, self.dictionary, self.cfg.max_seq_length, self.cfg.doc_stride,
            self.cfg.max_query_length, training, stats,
        )  # fmt: skip
        logger.info(
            "%s: %d questions -> %d windows (%d with the answer outside the window); skipped %d with an "
            "empty question, %d with an empty passage, %d without a usable answer span (%d answers not at "
            "their answer_start, %d answerable without answers); truncated %d questions to "
            "--max-query-length %d",
            path, stats["questions"], stats["windows"], stats["answer_outside_window"],
            stats["skipped_empty_question"], stats["skipped_empty_passage"], stats["skipped_no_answer_span"],
            stats["answer_mismatch"], stats["no_answer"], stats["truncated_question"],
            self.cfg.max_query_length,
        )  # fmt: skip
        if not windows:  # as the other tasks' "no pair left": before fairseq's batching fails on nothing
            raise ValueError(
                f"{path}: no question left to {'train on' if training else 'answer'} (see the counts above)"
            )
        return SquadWindowDataset(examples, tokenized, windows, self.dictionary, stats)

    def build_prepared_model(self, cfg, from_checkpoint=False):
        if not from_checkpoint and cfg.max_positions < self.cfg.max_seq_length:
            logger.info("position table grows from %d to --max-seq-length %d rows", cfg.max_positions,
                        self.cfg.max_seq_length)  # fmt: skip
            cfg.max_positions = self.cfg.max_seq_length
        model = super().build_prepared_model(cfg, from_checkpoint)
        if self.cfg.pretrained_checkpoint and not from_checkpoint:
            # before the heads exist: the checkpoint's task heads are dropped and the QA heads start fresh
            load_pretrained_weights(model, self.cfg.pretrained_checkpoint)
        model.register_span_head(self.cfg.span_head_name)
        if self.cfg.answerability_head:
            model.register_classification_head(self.cfg.answerability_head_name, ANSWERABILITY_CLASSES)
        return model

    @property
    def answerability_head_name(self) -> Optional[str]:
        """The answerability classifier's head name, None when the task trains none."""
        return self.cfg.answerability_head_name if self.cfg.answerability_head else None

    def max_positions(self):
        return self.cfg.max_seq_length
