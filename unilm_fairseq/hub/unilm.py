"""Python API: load a fine-tuned checkpoint in one call, then encode, generate and extract features.

    from unilm_fairseq import UniLMHubInterface
    unilm = UniLMHubInterface.from_pretrained("checkpoints", checkpoint_file="checkpoint_best.pt",
                                              data_name_or_path="data-bin", bpe="sentencepiece",
                                              sentencepiece_model="spm.model")
    unilm.generate(["a source text", "another one"], beam=5, lenpen=0.9, no_repeat_ngram_size=3)
    unilm.generate(["a source text"], beam=5, lenpen=0.9, lenpen_style="gnmt", no_repeat_ngram_size=3,
                   no_repeat_ngram_exempt=["."])  # the papers' decoding conventions

The interface is fairseq's :class:`~fairseq.hub_utils.GeneratorHubInterface` (like ``BARTHubInterface``):
batches go through the task's ``build_dataset_for_inference`` and ``inference_step``, exactly the path of
``fairseq-interactive``, so the same inputs and options give the same hypotheses as ``fairseq-generate``
and ``fairseq-interactive``. It is an ``nn.Module``: ``.cuda()``, ``.to(device)`` and ``.half()`` move the
model, and inputs follow it. ``UniLMv2Model.from_pretrained(...)`` returns the same object; ``UniLMModel``
is another name of the class.
"""

import copy
import logging
import os
from typing import Dict, List, Optional, Sequence, Union

import torch
from fairseq import hub_utils, utils
from fairseq.data import data_utils
from fairseq.hub_utils import GeneratorHubInterface
from omegaconf import open_dict
from torch import Tensor

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

Text = Union[str, Sequence[str]]
Tokens = Union[Tensor, Sequence[Tensor]]


class UniLMHubInterface(GeneratorHubInterface):
    """A loaded ``unilm_seq2seq`` model with its dictionary and text encoder (see the module docstring)."""

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        self.model = self.models[0]

    @classmethod
    def from_pretrained(
        cls,
        model_dir: str,
        checkpoint_file: str = "checkpoint_best.pt",
        data_name_or_path: str = ".",
        **kwargs,
    ) -> "UniLMHubInterface":
        """Load ``model_dir/checkpoint_file`` (``os.pathsep``-separated files make an ensemble).

        Args:
            model_dir: folder of the checkpoint; local only, nothing is downloaded.
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
        for name in checkpoint_file.split(os.pathsep):
            if not os.path.isfile(os.path.join(model_dir, name)):
                raise FileNotFoundError(f"checkpoint not found: {os.path.join(model_dir, name)}")
        kwargs.setdefault("user_dir", PACKAGE_DIR)
        kwargs.update(_local_bpe_files(model_dir, kwargs))
        loaded = hub_utils.from_pretrained(model_dir, checkpoint_file, data_name_or_path, **kwargs)
        return cls(loaded["args"], loaded["task"], loaded["models"])

    def encode(self, sentence: str) -> torch.LongTensor:
        """Raw text -> source ids ``(T,)``: tokenizer, bpe, dictionary, then ``</s>``.

        This is what ``fairseq-interactive`` builds from a line; the task's inference dataset turns it
        into "[SOS] text [EOS]" (the final ``</s>`` is [EOS]) and truncates it to
        ``--max-source-positions``.
        """
        return super().encode(sentence)

    def decode(self, tokens: Tensor) -> str:
        """Ids ``(T,)`` -> text: ``<s>``/``</s>`` dropped, bpe and tokenizer undone."""
        return super().decode(tokens)

    def generate(
        self,
        inputs: Union[Text, Tokens],
        beam: int = 5,
        verbose: bool = False,
        *,
        lenpen: float = 1.0,
        lenpen_style: Optional[str] = None,
        no_repeat_ngram_size: int = 0,
        no_repeat_ngram_exempt: Optional[Sequence[str]] = None,
        min_len: int = 1,
        max_len_a: float = 0,
        max_len_b: int = 200,
        nbest: int = 1,
        sampling: bool = False,
        sampling_topk: int = -1,
        sampling_topp: float = -1.0,
        temperature: float = 1.0,
        batch_size: Optional[int] = None,
        max_tokens: Optional[int] = None,
        **options,
    ):
        """Generate from raw text or from token ids, in batches, on the model's device.

        The keyword options are ``fairseq-generate``'s (``--lenpen`` is ``lenpen``); ``options`` takes
        any other field of fairseq's generation config (``unkpen``, ``diverse_beam_groups`` ...). Generation
        stops inside the position table (the task's ``inference_step``). ``batch_size``/``max_tokens``
        default to the checkpoint's dataset settings. ``lenpen_style`` (``"fairseq"`` or ``"gnmt"``) and
        ``no_repeat_ngram_exempt`` (dictionary symbols, e.g. ``["."]``) are the task's
        ``--lenpen-style`` and ``--no-repeat-ngram-exempt`` for this call; unset, the task's values hold.

        Returns:
            for a string, its best hypothesis as text (a list of ``nbest`` texts when ``nbest > 1``); for a
            list of strings, one such result per string, in input order. For ids (a ``(T,)`` tensor as
            :meth:`encode` returns, or a list of them), fairseq's hypothesis dicts instead of texts.
        """
        single = isinstance(inputs, str) or (torch.is_tensor(inputs) and inputs.dim() == 1)
        if single:
            inputs = [inputs]
        texts = all(isinstance(x, str) for x in inputs)
        tokens = [self.encode(x) for x in inputs] if texts else list(inputs)
        options.update(
            beam=beam, lenpen=lenpen, no_repeat_ngram_size=no_repeat_ngram_size, min_len=min_len,
            max_len_a=max_len_a, max_len_b=max_len_b, nbest=nbest, sampling=sampling,
            sampling_topk=sampling_topk, sampling_topp=sampling_topp, temperature=temperature,
        )  # fmt: skip
        # task options: passed only when given, so tasks without them keep working
        conventions = {"lenpen_style": lenpen_style, "no_repeat_ngram_exempt": no_repeat_ngram_exempt}
        conventions = {key: value for key, value in conventions.items() if value is not None}
        hypotheses = self._generate_tokens(tokens, options, batch_size, max_tokens, conventions)
        if verbose:
            for source, hypos in zip(tokens, hypotheses):
                logger.info("S\t%s", self.string(source))
                for hypo in hypos:
                    logger.info("H\t%.4f\t%s", hypo["score"], self.decode(hypo["tokens"]))
        if texts:
            decoded = [[self.decode(h["tokens"]) for h in hypos[:nbest]] for hypos in hypotheses]
            hypotheses = [d[0] for d in decoded] if nbest == 1 else decoded
        return hypotheses[0] if single else hypotheses

    def _generate_tokens(
        self,
        tokens: List[Tensor],
        options: Dict,
        batch_size: Optional[int],
        max_tokens: Optional[int],
        conventions: Dict,
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
        dataset = self.task.build_dataset_for_inference(tokens, [t.numel() for t in tokens])
        batches = self.task.get_batch_iterator(
            dataset=dataset,
            max_tokens=max_tokens if max_tokens or batch_size else self.cfg.dataset.max_tokens,
            max_sentences=batch_size if max_tokens or batch_size else self.cfg.dataset.batch_size,
            max_positions=self.max_positions,
            disable_iterator_cache=True,
        ).next_epoch_itr(shuffle=False)
        results = {}
        for batch in batches:
            batch = utils.apply_to_sample(lambda t: t.to(self.device), batch)
            hypotheses = self.task.inference_step(generator, self.models, batch)
            results.update(zip(batch["id"].tolist(), hypotheses))
        return [results[i] for i in range(len(tokens))]

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
        if isinstance(tokens, str) or (torch.is_tensor(tokens) and tokens.dim() == 1):
            tokens = [tokens]
        tokens = [self.encode(t) if isinstance(t, str) else t.cpu() for t in tokens]
        dataset = self.task.build_dataset_for_inference(tokens, [t.numel() for t in tokens])
        pad = self.src_dict.pad()
        src = data_utils.collate_tokens([dataset[i]["source"] for i in range(len(dataset))], pad)
        src = src.to(self.device)  # B x S
        features, _, padding, _ = self.model.encoder.source_states(src)
        return features.masked_fill(padding.unsqueeze(-1), 0)  # B x S x C


UniLMModel = UniLMHubInterface  # the name of the first releases


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
