"""The papers' decoding conventions as options of the generation tasks (``unilm_seq2seq``, ``palm_seq2seq``).

``--lenpen-style gnmt`` ranks finished hypotheses with GNMT's length penalty (see
:mod:`unilm_fairseq.modules.length_penalty`); ``--no-repeat-ngram-exempt`` names tokens whose n-grams
``--no-repeat-ngram-size`` never bans (see :mod:`unilm_fairseq.modules.ngram_block`). Both hold in
``fairseq-generate``, ``fairseq-interactive`` and the Python API, which all build their generator here.
"""

import contextlib
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.search import DiverseBeamSearch, LexicallyConstrainedBeamSearch
from fairseq.sequence_generator import SequenceGenerator

from ..modules.length_penalty import with_gnmt_length_penalty
from ..modules.ngram_block import with_prefix_ngram_blocker

LENPEN_STYLES = ("fairseq", "gnmt")


@dataclass
class DecodingConventionsConfig(FairseqDataclass):
    lenpen_style: ChoiceEnum(LENPEN_STYLES) = field(
        default="fairseq",
        metadata={
            "help": "how --lenpen a divides a finished hypothesis's log-probability, L being its length "
            "with </s>: fairseq, by L^a; gnmt, by ((5 + L) / 6)^a, the papers' length penalty (Wu et al. "
            "2016)"
        },
    )
    # a string, not a list: fairseq reads a list option as a Python literal, so a bare "." fails to
    # parse and "'<t>'" becomes three characters; dictionary symbols hold no spaces, and "," may be one
    no_repeat_ngram_exempt: Optional[str] = field(
        default=None,
        metadata={
            "help": "space-separated dictionary symbols, e.g. '.': --no-repeat-ngram-size never bans an "
            "n-gram that contains one of them (s2s-ft's decoder exempts '.' from trigram blocking)"
        },
    )


def check_generation_options(args) -> None:
    """Refuse generation options that cannot be honoured, before any decoding (fairseq would assert deep
    inside the search, or quietly return fewer hypotheses than asked for).

    ``args``: fairseq's generation options (``beam``, ``nbest``, ``min_len``, ``max_len_a``, ``max_len_b``).
    """
    beam, nbest = int(getattr(args, "beam", 1)), int(getattr(args, "nbest", 1))
    if beam < 1:
        raise ValueError(f"--beam {beam}: needs at least 1")
    if not 1 <= nbest <= beam:
        raise ValueError(
            f"--nbest {nbest} needs 1 <= nbest <= --beam ({beam}): the search keeps only beam hypotheses"
        )
    temperature = float(getattr(args, "temperature", 1.0))
    if temperature <= 0:
        raise ValueError(f"--temperature {temperature}: must be above 0 (it divides the scores)")
    min_len, max_len_a = int(getattr(args, "min_len", 1)), float(getattr(args, "max_len_a", 0) or 0)
    max_len_b = int(getattr(args, "max_len_b", 200))
    if max_len_a == 0 and min_len > max_len_b:
        raise ValueError(
            f"--min-len {min_len} is above the longest output allowed (--max-len-a 0 --max-len-b {max_len_b})"
        )


def check_min_len_fits(min_len: int, last_step: int, src_len: int) -> None:
    """Per batch: the generator's last step (``max_len_a * src_len + max_len_b``, capped by the position
    table) must leave room for ``min_len`` tokens."""
    if min_len > last_step:
        raise ValueError(
            f"--min-len {min_len} cannot be met: sources of {src_len} tokens allow at most {last_step} "
            "output tokens (--max-len-a/--max-len-b and the position table)"
        )


def search_sample(generator, sample: dict) -> dict:
    """The batch to give ``generator``: without ``id`` for a diverse beam search.

    fairseq 0.12's ``SequenceGenerator`` passes the batch's ``id`` (dataset indices) to its search as
    ``original_batch_idxs``, and ``DiverseBeamSearch`` uses them as rows of its per-sentence counts of
    tokens shared between groups. With ids past the batch size it fails (``IndexError``); with ids that
    are not the rows' own positions it penalises one sentence by another's counts. Without ``id`` the
    generator numbers the rows ``0 .. B-1``, the rows that search keeps its counts in. Other searches get
    the ids (a prefix-constrained search hands them to its function).
    """
    if isinstance(getattr(generator, "search", None), DiverseBeamSearch) and "id" in sample:
        return {key: value for key, value in sample.items() if key != "id"}
    return sample


@contextlib.contextmanager
def constrained_search_limit(generator, constraints):
    """Turn the failures of fairseq's constrained search into errors that say why.

    That search (``--constraints``) reads each sentence's constraints from the batch. A binarized split
    has none (``fairseq-generate``), and fairseq's search would fail on ``None`` with a ``TypeError``.
    It also bans ``</s>`` until a hypothesis holds all of its sentence's constraints, and a sentence ends
    only when ``--beam`` hypotheses have ended; at the length limit every other token is banned as well,
    so a sentence with fewer such hypotheses fails fairseq's ``step < max_len`` assertion.
    """
    constrained = isinstance(getattr(generator, "search", None), LexicallyConstrainedBeamSearch)
    if constrained and constraints is None:
        raise ValueError(
            "--constraints: this batch carries no constraints. A binarized split (fairseq-generate) has "
            "none; give them with each source to fairseq-interactive (the source, then each constraint, "
            "tab-separated) or to the Python API's generate(..., constraints=...)"
        )
    try:
        yield
    except AssertionError as error:
        if not constrained:
            raise
        raise ValueError(
            f"constrained decoding reached the length limit before --beam {generator.beam_size} hypotheses "
            "held every constraint of their sentence (fairseq's search then fails its assertion "
            f"'{error}'): raise --max-len-a/--max-len-b, or lower --beam"
        ) from error


class DecodingConventionsTask:
    """Mixin for a task with a :class:`DecodingConventionsConfig`: its generator honours both options.

    ``build_generator`` takes them as keywords too (the Python API's per-call values: a list of symbols,
    or one space-separated string); unset, the task's options apply.
    """

    def build_generator(
        self,
        models,
        args,
        seq_gen_cls=None,
        extra_gen_cls_kwargs=None,
        *,
        lenpen_style: Optional[str] = None,
        no_repeat_ngram_exempt: Optional[Sequence[str]] = None,
        **kwargs,
    ):
        check_generation_options(args)
        style = str(lenpen_style or self.cfg.lenpen_style)
        if style not in LENPEN_STYLES:
            raise ValueError(f"lenpen_style {style!r}: expected one of {', '.join(LENPEN_STYLES)}")
        if style == "gnmt":
            if seq_gen_cls is None and getattr(args, "print_alignment", None):
                # fairseq picks its alignment generator only when no class is given
                raise ValueError("--lenpen-style gnmt does not combine with --print-alignment")
            seq_gen_cls = with_gnmt_length_penalty(seq_gen_cls or SequenceGenerator)
        generator = super().build_generator(
            models, args, seq_gen_cls=seq_gen_cls, extra_gen_cls_kwargs=extra_gen_cls_kwargs, **kwargs
        )
        if no_repeat_ngram_exempt is None:
            no_repeat_ngram_exempt = self.cfg.no_repeat_ngram_exempt or ""
        if isinstance(no_repeat_ngram_exempt, str):  # the command line's form
            no_repeat_ngram_exempt = no_repeat_ngram_exempt.split()
        return with_prefix_ngram_blocker(generator, self.symbol_indices(no_repeat_ngram_exempt))

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's step, after checking that this batch's length limit leaves room for ``--min-len``
        (with ``--max-len-a`` the limit depends on the batch's source length; the search would assert)."""
        if all(hasattr(generator, name) for name in ("min_len", "max_len_a", "max_len_b", "max_len")):
            if not getattr(generator, "match_source_len", False):  # a copy-length search has no limit
                src_len = sample["net_input"]["src_tokens"].size(1)
                wanted = int(generator.max_len_a * src_len + generator.max_len_b)
                check_min_len_fits(generator.min_len, min(wanted, generator.max_len - 1), src_len)
        with constrained_search_limit(generator, constraints):
            return super().inference_step(
                generator, models, search_sample(generator, sample), prefix_tokens=prefix_tokens,
                constraints=constraints,
            )  # fmt: skip

    def symbol_indices(self, symbols: Sequence[str]) -> List[int]:
        """Target dictionary ids of ``symbols``; a symbol the dictionary lacks is an error, not ``<unk>``."""
        dictionary = self.target_dictionary
        missing = [s for s in symbols if s not in dictionary.indices]
        if missing:
            raise ValueError(f"--no-repeat-ngram-exempt: {missing} not in the dictionary")
        return [dictionary.index(s) for s in symbols]
