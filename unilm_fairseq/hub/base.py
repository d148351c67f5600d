"""Python API: load a fine-tuned checkpoint in one call, then encode, generate, score and extract features.

    from unilm_fairseq import UniLMHubInterface
    unilm = UniLMHubInterface.from_pretrained("checkpoints", checkpoint_file="checkpoint_best.pt",
                                              data_name_or_path="data-bin", bpe="sentencepiece",
                                              sentencepiece_model="spm.model")
    unilm.generate(["a source text", "another one"], beam=5, lenpen=0.9, no_repeat_ngram_size=3)
    unilm.generate(["a source text"], beam=5, lenpen=0.9, lenpen_style="gnmt", no_repeat_ngram_size=3,
                   no_repeat_ngram_exempt=["."])  # the papers' decoding conventions
    unilm.generate([unilm.encode("a source text")], beam=5, nbest=3)  # 3 hypothesis dicts with scores
    unilm.score(["a source text"], ["its target"])  # [{"positional_scores", "score", "log_prob", "tokens"}]

The interface is fairseq's :class:`~fairseq.hub_utils.GeneratorHubInterface` (like ``BARTHubInterface``):
batches go through the task's ``build_dataset_for_inference`` and ``inference_step``, exactly the path of
``fairseq-interactive``, so the same inputs and options give the same hypotheses as ``fairseq-generate``
and ``fairseq-interactive``. :meth:`UniLMHubInterface.score` computes the log-probabilities of given
targets through the training forward of the checkpoint's fine-tuning method, which are those decoding
assigns. It is an ``nn.Module``: ``.cuda()``, ``.to(device)``, ``.half()``, ``.float()`` and ``.cpu()`` move
or cast the model, and inputs follow it. ``UniLMv2Model.from_pretrained(...)`` returns the same object;
``UniLMModel`` is another name of the class.
"""

import contextlib
import copy
import json
import logging
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from fairseq import hub_utils, utils
from fairseq.data import FairseqDataset, data_utils
from fairseq.hub_utils import GeneratorHubInterface
from fairseq.token_generation_constraints import pack_constraints
from omegaconf import open_dict
from torch import Tensor, nn

from ..data.seq2seq.scoring import average_over_models, scoring_dataset, target_log_probs
from ..data.seq2seq.seq2seq_dataset import SOURCE_SPECIALS

logger = logging.getLogger(__name__)

# the --user-dir that registers the plugin
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# files of each text encoder looked up in the model folder when its option is not given, first match wins
# (fairseq's own defaults for gpt2 are URLs: nothing may be downloaded)
BPE_FILES = {
    "wordpiece": {"wordpiece_vocab": ("vocab.txt",)},
    "sentencepiece": {"sentencepiece_model": ("sentencepiece.bpe.model", "spm.model")},
    "gpt2": {
        "gpt2_encoder_json": ("encoder.json", "vocab.json"),
        "gpt2_vocab_bpe": ("vocab.bpe", "merges.txt"),
    },
}
REMOTE = ("http://", "https://")
# a model folder's decoding settings (examples/s2s_ft/finetune.sh writes it beside the checkpoints)
GENERATION_FILE = "generation.json"
# each setting and the JSON values it takes: "text", "integer", "number", "list of text" or "true or false"
GENERATION_KEYS = {
    "checkpoint": "text",
    "bpe": "text",
    "beam": "integer",
    "lenpen": "number",
    "lenpen_style": "text",
    "min_len": "integer",
    "max_len_a": "number",
    "max_len_b": "integer",
    "no_repeat_ngram_size": "integer",
    "no_repeat_ngram_exempt": "list of text",
    "lowercase": "true or false",  # how the training text was cased; absent: the vocabulary decides
}


def _is_json_kind(value, kind: str) -> bool:
    """Whether a JSON value is of ``kind`` (GENERATION_KEYS'); true and false are not numbers here."""
    if kind == "true or false" or isinstance(value, bool):
        return kind == "true or false" and isinstance(value, bool)
    if kind == "list of text":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, {"text": str, "integer": int, "number": (int, float)}[kind])


Text = Union[str, Sequence[str]]
Tokens = Union[Tensor, Sequence[Tensor]]
Inputs = Union[str, Tensor, Sequence[Union[str, Tensor]]]


def is_one_input(inputs: Inputs) -> bool:
    """Whether ``inputs`` is one text or one ``(T,)`` id tensor, rather than a list of them."""
    return isinstance(inputs, str) or (torch.is_tensor(inputs) and inputs.dim() == 1)


class UniLMHubInterface(GeneratorHubInterface):
    """A loaded ``unilm_seq2seq`` model with its dictionary and text encoder (see the module docstring)."""

    # the interface of each other task's checkpoints: a subclass names its tasks (``TASK``, the one its model
    # folders come from, and ``OTHER_TASKS``) and is entered here for each
    BY_TASK: Dict[str, type] = {}
    TASK: Optional[str] = None
    OTHER_TASKS: Tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for task in (cls.TASK, *cls.OTHER_TASKS) if cls.TASK is not None else ():
            UniLMHubInterface.BY_TASK[task] = cls

    def __init__(self, cfg, task, models, generation_defaults: Optional[Dict] = None):
        super().__init__(cfg, task, models)
        self.model = self.models[0]
        # decoding settings the model folder was validated with (its generation.json), used by generate()
        self.generation_defaults = dict(generation_defaults or {})
        # a model trained on lowercased text whose text encoder does not lowercase itself (not WordPiece)
        self.lowercase_input = False

    @classmethod
    def from_pretrained(
        cls,
        model_dir: str,
        checkpoint_file: Optional[str] = None,
        data_name_or_path: str = ".",
        **kwargs,
    ) -> "UniLMHubInterface":
        """Load ``model_dir/checkpoint_file`` (``os.pathsep``-separated files make an ensemble). Called on
        this class, a ``palm_seq2seq`` checkpoint comes back as :class:`PALMHubInterface`.

        A model folder that ``examples/s2s_ft/finetune.sh`` wrote (its ``checkpoints/``) loads with one
        argument: it holds the dictionaries, ``vocab.txt`` and ``generation.json`` (:data:`GENERATION_FILE`:
        the checkpoint that was decoded, the tokenizer and the decoding settings of the test run, and, when
        the recipe chose it, whether the training text was lowercased), which give ``checkpoint_file``,
        ``bpe``, the casing and :meth:`generate`'s defaults unless they are given.

        Args:
            model_dir: folder of the checkpoint; local only, nothing is downloaded.
            checkpoint_file: default: the folder's ``generation.json`` names it, else ``checkpoint_best.pt``.
            data_name_or_path: folder with the task's ``dict.{src,tgt}.txt`` (the binarized data of
                ``fairseq-preprocess``); relative to ``model_dir`` when it starts with ``.``.
            kwargs: overrides of the saved configuration, by fairseq option name, e.g.
                ``bpe="sentencepiece", sentencepiece_model=...``, ``bpe="wordpiece"`` (``wordpiece_vocab``;
                casing from the vocabulary unless ``wordpiece_cased`` or ``wordpiece_lowercase``) or
                ``bpe="gpt2"`` (``gpt2_encoder_json``, ``gpt2_vocab_bpe``): an encoder file not given is
                looked up in ``model_dir`` (:data:`BPE_FILES`); also ``max_source_positions=...`` and other
                task options.
        """
        if not os.path.isdir(model_dir):
            raise FileNotFoundError(f"model directory not found: {model_dir}")
        defaults = read_generation_defaults(model_dir)
        checkpoint_file = checkpoint_file or defaults.pop("checkpoint", None) or "checkpoint_best.pt"
        defaults.pop("checkpoint", None)
        if "bpe" in defaults:
            kwargs.setdefault("bpe", defaults.pop("bpe"))
        lowercase = defaults.pop("lowercase", None)  # the training text's casing, when the folder records it
        casing_given = {"wordpiece_cased", "wordpiece_lowercase"} & set(kwargs)
        if lowercase is not None and kwargs.get("bpe") == "wordpiece" and not casing_given:
            kwargs["wordpiece_lowercase" if lowercase else "wordpiece_cased"] = True
        data_dir = (
            os.path.join(model_dir, data_name_or_path)
            if data_name_or_path.startswith(".")
            else data_name_or_path
        )
        if "source_lang" not in kwargs and all(
            os.path.isfile(os.path.join(data_dir, f"dict.{side}.txt")) for side in ("src", "tgt")
        ):  # a model folder holds the dictionaries without binarized files to infer the pair from
            kwargs.update(source_lang="src", target_lang="tgt")
        for name in checkpoint_file.split(os.pathsep):
            if not os.path.isfile(os.path.join(model_dir, name)):
                raise FileNotFoundError(f"checkpoint not found: {os.path.join(model_dir, name)}")
        kwargs.setdefault("user_dir", PACKAGE_DIR)
        kwargs.update(_local_bpe_files(model_dir, kwargs))
        loaded = hub_utils.from_pretrained(model_dir, checkpoint_file, data_name_or_path, **kwargs)
        task_name = getattr(loaded["args"].task, "_name", None)
        if cls is UniLMHubInterface:  # e.g. a PALM folder: its interface scores through PALM's forward
            cls = cls.BY_TASK.get(task_name, cls)
        elif cls.TASK is not None and task_name not in (cls.TASK, *cls.OTHER_TASKS):
            raise ValueError(
                f"{model_dir} holds a --task {task_name} model, not {cls.TASK}: load it with "
                f"UniLMHubInterface.from_pretrained, which picks the interface of its task"
            )
        hub = cls(loaded["args"], loaded["task"], loaded["models"], generation_defaults=defaults)
        hub.lowercase_input = bool(lowercase) and kwargs.get("bpe") != "wordpiece"
        return hub

    def encode(self, sentence: str) -> torch.LongTensor:
        """Raw text -> source ids ``(T,)``: tokenizer, bpe, dictionary, then ``</s>``.

        This is what ``fairseq-interactive`` builds from a line; the task's inference dataset turns it
        into "[SOS] text [EOS]" (the final ``</s>`` is [EOS]) and truncates it to
        ``--max-source-positions``. A model folder whose ``generation.json`` says ``"lowercase": true``
        lowercases the text first, as its training text was (WordPiece: with its accents stripped).
        """
        return super().encode(sentence.lower() if self.lowercase_input else sentence)

    def decode(self, tokens: Tensor) -> str:
        """Ids ``(T,)`` -> text: ``<s>``/``</s>`` dropped, bpe and tokenizer undone."""
        return super().decode(tokens)

    def generate(
        self,
        inputs: Union[Text, Tokens],
        beam: Optional[int] = None,
        verbose: bool = False,
        *,
        lenpen: Optional[float] = None,
        lenpen_style: Optional[str] = None,
        no_repeat_ngram_size: Optional[int] = None,
        no_repeat_ngram_exempt: Optional[Sequence[str]] = None,
        min_len: Optional[int] = None,
        max_len_a: Optional[float] = None,
        max_len_b: Optional[int] = None,
        nbest: int = 1,
        sampling: bool = False,
        sampling_topk: int = -1,
        sampling_topp: float = -1.0,
        temperature: float = 1.0,
        batch_size: Optional[int] = None,
        max_tokens: Optional[int] = None,
        decoding_step: Optional[str] = None,
        constraints: Optional[Sequence] = None,
        ordered_constraints: bool = True,
        **options,
    ):
        """Generate from raw text or from token ids, in batches, on the model's device.

        The keyword options are ``fairseq-generate``'s (``--lenpen`` is ``lenpen``); ``options`` takes
        any other field of fairseq's generation config (``unkpen``, ``diverse_beam_groups`` ...). Generation
        stops inside the position table (the task's ``inference_step``). ``batch_size``/``max_tokens``
        default to the checkpoint's dataset settings. ``beam``, ``lenpen``, ``no_repeat_ngram_size``,
        ``min_len``, ``max_len_a`` and ``max_len_b`` not given come from the model folder's
        ``generation.json`` (see :meth:`from_pretrained`), else beam 5, lenpen 1.0, no blocking, min_len 1,
        and an output as long as the model's target positions allow (``max_len_a`` 0, ``max_len_b`` the
        task's ``--max-target-positions``). ``lenpen_style`` (``"fairseq"`` or ``"gnmt"``) and
        ``no_repeat_ngram_exempt`` (dictionary symbols, e.g. ``["."]``) are the task's
        ``--lenpen-style`` and ``--no-repeat-ngram-exempt`` for this call; unset, the task's values hold.
        ``nbest`` hypotheses per input come back, best first; beam search (or sampling) keeps ``beam`` of
        them, so ``nbest`` must be between 1 and ``beam`` (a ``ValueError`` otherwise).
        ``decoding_step`` (``"eager"``, ``"static"`` or ``"cuda_graph"``) is the ``unilm_seq2seq`` task's
        ``--decoding-step`` for this call; unset, the task's value holds (``"eager"`` unless given).
        ``constraints``: lexically constrained decoding (``fairseq-interactive --constraints``), every
        hypothesis holding each phrase: per input, a list of phrases, each text or ids without ``</s>``
        (for a single input, its list of phrases); in the order given unless ``ordered_constraints`` is
        False.

        Returns:
            for a string, its best hypothesis as text (a list of ``nbest`` texts when ``nbest > 1``); for a
            list of strings, one such result per string, in input order. For ids (a ``(T,)`` tensor as
            :meth:`encode` returns, or a list of them), a list of ``nbest`` fairseq hypothesis dicts per
            input instead of texts: ``tokens`` (ending with ``</s>``), ``score`` (the generator's, length
            penalty included), ``positional_scores`` (the log-probability of each token, natural log),
            ``alignment`` and ``attention``.
        """
        settings = self._decoding_settings(
            beam=beam, lenpen=lenpen, no_repeat_ngram_size=no_repeat_ngram_size, min_len=min_len,
            max_len_a=max_len_a, max_len_b=max_len_b,
        )  # fmt: skip
        beam = settings["beam"]
        if not 1 <= nbest <= beam:
            raise ValueError(
                f"nbest={nbest} needs 1 <= nbest <= beam (beam={beam}): the search keeps beam hypotheses "
                "per input"
            )
        single = is_one_input(inputs)
        inputs = [inputs] if single else list(inputs)  # read once: a generator or an open file too
        texts = all(isinstance(x, str) for x in inputs)
        tokens, _ = self._as_ids(inputs, "inputs")
        options.update(
            **settings, nbest=nbest, sampling=sampling, sampling_topk=sampling_topk,
            sampling_topp=sampling_topp, temperature=temperature,
        )  # fmt: skip
        packed = None
        if constraints is not None:
            packed = self._packed_constraints([constraints] if single else constraints, len(tokens))
            options["constraints"] = "ordered" if ordered_constraints else "unordered"
        # task options: passed only when given, so tasks without them keep working
        conventions = {
            "lenpen_style": lenpen_style
            if lenpen_style is not None
            else self.generation_defaults.get("lenpen_style"),
            "no_repeat_ngram_exempt": no_repeat_ngram_exempt
            if no_repeat_ngram_exempt is not None
            else self.generation_defaults.get("no_repeat_ngram_exempt"),
        }
        conventions = {key: value for key, value in conventions.items() if value is not None}
        with self._decoding_step(decoding_step):
            hypotheses = [
                h[:nbest]
                for h in self._generate_tokens(tokens, options, batch_size, max_tokens, conventions, packed)
            ]
        if verbose:
            for source, hypos in zip(tokens, hypotheses):
                logger.info("S\t%s", self.string(source))
                for hypo in hypos:
                    logger.info("H\t%.4f\t%s", hypo["score"], self.decode(hypo["tokens"]))
        if texts:
            decoded = [[self.decode(h["tokens"]) for h in hypos] for hypos in hypotheses]
            hypotheses = [d[0] for d in decoded] if nbest == 1 else decoded
        return hypotheses[0] if single else hypotheses

    def _packed_constraints(self, constraints: Sequence, count: int) -> Tensor:
        """Per input, its phrases (text, or ids without ``</s>``) -> packed ``(N, L)`` constraints."""
        if len(constraints) != count:
            raise ValueError(
                f"constraints: one list of phrases per input, got {len(constraints)} for {count}"
            )
        per_input = []
        for i, phrases in enumerate(constraints):
            if isinstance(phrases, (str, Tensor)):
                raise TypeError(f"constraints[{i}]: expected a list of phrases, got {phrases!r}")
            ids = [self.encode(p)[:-1] if isinstance(p, str) else torch.as_tensor(p).long() for p in phrases]
            if any(t.numel() == 0 or (t == self.tgt_dict.eos()).any() for t in ids):
                raise ValueError(f"constraints[{i}]: a phrase is empty or holds </s>")
            per_input.append(ids)
        return pack_constraints(per_input)

    @contextlib.contextmanager
    def _decoding_step(self, mode: Optional[str]):
        """The task's ``decoding_step`` set to ``mode`` inside the block (unchanged for None); the decoder
        refuses a mode it does not know."""
        if mode is None:
            yield
            return
        cfg = self.task.cfg
        if not all(hasattr(model.decoder, "step_mode") for model in self.models):
            raise TypeError("decoding_step is an option of the unilm_seq2seq task's models (not PALM's)")
        before = getattr(cfg, "decoding_step", "eager")  # configs saved before the field lack it
        with open_dict(cfg):
            cfg.decoding_step = mode
        try:
            yield
        finally:
            with open_dict(cfg):
                cfg.decoding_step = before

    def _decoding_settings(self, **given) -> Dict:
        """The call's decoding settings: given, else the model folder's, else the built-in defaults."""
        builtin = {
            "beam": 5, "lenpen": 1.0, "no_repeat_ngram_size": 0, "min_len": 1, "max_len_a": 0,
            "max_len_b": self._target_limit(),
        }  # fmt: skip
        return {
            key: value if value is not None else self.generation_defaults.get(key, builtin[key])
            for key, value in given.items()
        }

    def _target_limit(self) -> int:
        """The longest output the model was trained for: the target limit of the s2s-ft task's settled spec,
        or the task's ``--max-target-positions`` (PALM), else 200."""
        spec = getattr(getattr(self, "task", None), "seq2seq_spec", None)
        limit = spec.max_target if spec is not None else getattr(self.cfg.task, "max_target_positions", None)
        return int(limit) if limit else 200

    def _generate_tokens(
        self,
        tokens: List[Tensor],
        options: Dict,
        batch_size: Optional[int],
        max_tokens: Optional[int],
        conventions: Dict,
        constraints: Optional[Tensor] = None,
    ) -> List[List[Dict[str, Tensor]]]:
        if not tokens:
            return []
        gen_cfg = copy.deepcopy(self.cfg.generation)
        with open_dict(gen_cfg):
            for key, value in options.items():
                if key not in gen_cfg:
                    raise TypeError(f"generate() got an unknown generation option {key!r}")
                setattr(gen_cfg, key, value)
        generator = self.task.build_generator(self.models, gen_cfg, **conventions)
        lengths = [t.numel() for t in tokens]
        dataset = self.task.build_dataset_for_inference(tokens, lengths, constraints=constraints)
        results = {}
        for batch in self._batches(dataset, batch_size, max_tokens):
            hypotheses = self.task.inference_step(
                generator, self.models, batch, constraints=batch.get("constraints")
            )
            results.update(zip(batch["id"].tolist(), hypotheses))
        return [results[i] for i in range(len(tokens))]

    def _batches(self, dataset: FairseqDataset, batch_size: Optional[int], max_tokens: Optional[int]):
        """``dataset``'s batches on the model's device, in the task's order (each item keeps its ``id``);
        ``batch_size``/``max_tokens`` default to the checkpoint's dataset settings."""
        given = bool(max_tokens or batch_size)
        max_tokens = max_tokens if given else self.cfg.dataset.max_tokens
        if max_tokens and len(dataset):
            longest = max(dataset.num_tokens(i) for i in range(len(dataset)))
            if max_tokens < longest:  # fairseq's batching would assert
                raise ValueError(f"max_tokens={max_tokens} is below the longest input's {longest} tokens")
        batches = self.task.get_batch_iterator(
            dataset=dataset,
            max_tokens=max_tokens,
            max_sentences=batch_size if given else self.cfg.dataset.batch_size,
            max_positions=self.max_positions,
            disable_iterator_cache=True,
        ).next_epoch_itr(shuffle=False)
        for batch in batches:
            yield utils.apply_to_sample(lambda t: t.to(self.device), batch)

    def score(
        self,
        sources: Inputs,
        targets: Inputs,
        batch_size: Optional[int] = None,
        max_tokens: Optional[int] = None,
    ) -> Union[Dict[str, Tensor], List[Dict[str, Tensor]]]:
        """The log-probability of each target given its source, token by token, in batches.

        Each target token's log-probability is read where the training forward of the checkpoint's
        fine-tuning method predicts it, with the context decoding gives it: the source and the target
        tokens before it. Causal: the causal layout (its start token and ``t_1 .. t_{n-1}`` fed, each
        predicting the next). Pseudo-masked: the pseudo-masked layout without target noise (``[P]`` j
        predicts ``t_j``). Masked: the same layout, whose ``[P]`` is the ``[M]`` the masked method decodes
        with: what a masked training example predicts at ``j`` when ``t_j`` is its only ``[M]``. These are
        the log-probabilities :meth:`generate` reports for the same tokens (``positional_scores``).
        Sources are truncated to ``max_source_positions`` as in generation; a target longer than
        ``max_target_positions`` (its ``</s>`` included) is a ``ValueError``. An ensemble's
        probabilities are averaged, as fairseq's ensembles do.

        Args:
            sources, targets: raw text (encoded by :meth:`encode`) or ids ``(T,)`` ending with ``</s>``
                as :meth:`encode` returns them (a hypothesis' ``tokens`` too), or equal-length lists of
                either.
            batch_size, max_tokens: as in :meth:`generate`.
        Returns:
            per pair (one dict for a single source and target, else a list in input order): ``tokens``,
            the target ids ``(T,)``; ``positional_scores`` ``(T,)`` float32, ``log p(t_j | source,
            t_<j)`` in natural log, the final ``</s>`` included; ``score``, their mean (fairseq's
            convention, a hypothesis' ``score`` without a length penalty); ``log_prob``, their sum,
            ``log p(target | source)``. Tensors are on the CPU.
        """
        src, single = self._as_ids(sources, "sources")
        tgt, single_target = self._as_ids(targets, "targets")
        if single != single_target or len(src) != len(tgt):
            raise ValueError(
                f"score() takes as many targets as sources: got {len(src)} source(s) and {len(tgt)} target(s)"
            )
        per_model = [self._model_log_probs(model, src, tgt, batch_size, max_tokens) for model in self.models]
        results = [
            {"tokens": target, "positional_scores": scores, "score": scores.mean(), "log_prob": scores.sum()}
            for target, scores in zip(tgt, average_over_models(per_model))
        ]
        return results[0] if single else results

    def _as_ids(self, inputs: Inputs, name: str) -> Tuple[List[Tensor], bool]:
        """Texts or ids (ending with ``</s>``) -> ids on the CPU, and whether one input was given. Ids
        without the ``</s>`` are refused: the datasets drop a source's last id as its ``</s>``."""
        single = is_one_input(inputs)
        ids = []
        for i, item in enumerate([inputs] if single else inputs):
            if isinstance(item, str):
                item = self.encode(item)
            elif not (torch.is_tensor(item) and item.dim() == 1 and not item.is_floating_point()):
                raise TypeError(f"{name}[{i}]: expected a string or a 1-D tensor of ids, got {item!r}")
            if item.numel() == 0 or int(item[-1]) != self.src_dict.eos():
                raise ValueError(f"{name}[{i}] does not end with </s>: give ids as encode() returns them")
            ids.append(item.long().cpu())
        return ids, single

    def _model_log_probs(
        self,
        model: nn.Module,
        sources: List[Tensor],
        targets: List[Tensor],
        batch_size: Optional[int],
        max_tokens: Optional[int],
    ) -> List[Tensor]:
        """``(T,)`` float32 log-probabilities of each target's tokens under ``model``, in input order."""
        if not sources:
            return []
        results = {}
        with torch.no_grad():
            for batch in self._batches(
                self._scoring_dataset(model, sources, targets), batch_size, max_tokens
            ):
                results.update(zip(batch["id"].tolist(), self._target_log_probs(model, batch)))
        return [results[i].cpu() for i in range(len(sources))]

    def _scoring_dataset(self, model: nn.Module, sources: List[Tensor], targets: List[Tensor]):
        """The pairs in the scoring layout (:mod:`unilm_fairseq.data.seq2seq.scoring`), checked."""
        # the model's method and segment ids, the task's settled limits (one pair for an ensemble)
        spec, limits = model.seq2seq_spec, self.task.seq2seq_spec
        max_source, max_target = limits.max_source, limits.max_target
        too_long = [i for i, t in enumerate(targets) if len(t) > max_target]
        if too_long:
            raise ValueError(
                f"targets {too_long[:5]} are longer than max_target_positions={max_target} (</s> included): "
                "they cannot be scored whole"
            )
        truncated = sum(len(s) - 1 > max_source - SOURCE_SPECIALS for s in sources)
        if truncated:
            logger.warning(
                "truncated %d of %d sources to max_source_positions %d", truncated, len(sources), max_source
            )
        return scoring_dataset(spec, limits, self.src_dict, sources, targets)

    def _target_log_probs(self, model: nn.Module, batch: Dict) -> List[Tensor]:
        """A :meth:`_scoring_dataset` batch -> each row's target log-probabilities."""
        return target_log_probs(model, batch)

    def extract_features(self, tokens: Union[str, Tokens]) -> Tensor:
        """Final-layer states of the source encoding the decoder reads.

        Args:
            tokens: ids ``(T,)`` as :meth:`encode` returns them, or raw text, or a list of either.
        Returns:
            ``(B, S, C)`` states of each "[SOS] tokens" (``S = T + 1`` for the longest; its final
            ``</s>`` is the [EOS]), computed with bidirectional attention over the source alone, source
            segment and positions ``0..S-1``; right-padded, with zeros on padding. ``B = 1`` for one input.
            A causal model's source segment is "[SOS] tokens" without the [EOS], which its decoder
            feeds as the start token (s2s-ft §2.1, Figure 1a): that row is zero too.
        """
        tokens, _ = self._as_ids(tokens if is_one_input(tokens) else list(tokens), "tokens")
        dataset = self.task.build_dataset_for_inference(tokens, [t.numel() for t in tokens])
        pad = self.src_dict.pad()
        src = data_utils.collate_tokens([dataset[i]["source"] for i in range(len(dataset))], pad)
        src = src.to(self.device)  # B x S
        features, _, padding, _ = self.model.encoder.source_states(src)
        return features.masked_fill(padding.unsqueeze(-1), 0)  # B x S x C


UniLMModel = UniLMHubInterface  # the name of the first releases


def read_generation_defaults(model_dir: str) -> Dict:
    """The model folder's ``generation.json`` (``{}`` when it has none); a broken one is an error."""
    path = os.path.join(model_dir, GENERATION_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            defaults = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a JSON object of decoding settings ({err})") from err
    if not isinstance(defaults, dict):
        raise ValueError(f"{path}: not a JSON object of decoding settings")
    unknown = sorted(set(defaults) - set(GENERATION_KEYS))
    if unknown:
        raise ValueError(
            f"{path}: unknown setting {unknown[0]!r} (known: {', '.join(sorted(GENERATION_KEYS))})"
        )
    for key, value in defaults.items():
        if not _is_json_kind(value, GENERATION_KEYS[key]):
            raise ValueError(f"{path}: {key} is {json.dumps(value)}, not {GENERATION_KEYS[key]}")
    return defaults


def _local_bpe_files(model_dir: str, kwargs: Dict) -> Dict[str, str]:
    """The encoder files the chosen ``bpe`` needs and ``kwargs`` lacks, found in ``model_dir``."""
    found = {}
    for option, names in BPE_FILES.get(kwargs.get("bpe"), {}).items():
        given = kwargs.get(option)
        if given is not None:
            if str(given).startswith(REMOTE):
                raise ValueError(f"{option}={given}: give a local file, nothing is downloaded")
            continue
        paths = [os.path.join(model_dir, name) for name in names]
        existing = [path for path in paths if os.path.isfile(path)]
        if not existing:
            raise FileNotFoundError(f"bpe={kwargs['bpe']} needs {option}=... (none of {paths} exists)")
        found[option] = existing[0]
    return found
