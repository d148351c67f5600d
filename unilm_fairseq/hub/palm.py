"""Python API for ``palm`` checkpoints: load in one call, then generate continuations or answers from text,
or score given ones.

    from unilm_fairseq import PALMHubInterface
    palm = PALMHubInterface.from_pretrained("checkpoints", checkpoint_file="checkpoint_best.pt",
                                            data_name_or_path="data-bin", bpe="sentencepiece",
                                            sentencepiece_model="spm.model")
    palm.generate(["a context to continue"], beam=5, lenpen=1.0, no_repeat_ngram_size=3)
    palm.generate(["a context"], beam=5, lenpen=1.0, lenpen_style="gnmt", no_repeat_ngram_size=3,
                  no_repeat_ngram_exempt=["."])  # palm_seq2seq's --lenpen-style, --no-repeat-ngram-exempt
    palm.score(["a context"], ["its continuation"])  # log-probabilities of the pointer-generator

``PALMModel.from_pretrained(...)`` returns the same object. Batches go through the task's
``build_dataset_for_inference`` and ``inference_step``, the path of ``fairseq-interactive`` (see
:class:`unilm_fairseq.hub.UniLMHubInterface`, whose loading, encoding, generation and scoring it shares).
"""

from typing import Dict, List, Union

import numpy as np
from fairseq.data import LanguagePairDataset, data_utils
from torch import Tensor, nn

from .base import Tokens, UniLMHubInterface, is_one_input


class PALMHubInterface(UniLMHubInterface):
    """A loaded ``palm`` model (``--task palm_seq2seq``) with its dictionary and text encoder.

    :meth:`score` reads each target token's log-probability from the training forward of fairseq's
    translation data (``prev_output_tokens`` = ``</s>`` then the target without its last token) under
    the pointer-generator's distribution (``get_normalized_probs``), as ``label_smoothed_cross_entropy``
    does; sources and targets beyond the model's positions are an error, not truncated.
    """

    TASK = "palm_seq2seq"  # UniLMHubInterface.from_pretrained gives this task's folders this interface
    OTHER_TASKS = ("palm_pretrain",)  # and a pre-trained model's: its continuations, scored the same way

    def _check_lengths(self, name: str, inputs: List[Tensor], side: int) -> None:
        """A ``ValueError`` naming the inputs longer than the model's positions on ``side`` (0: source,
        1: target), rather than fairseq's batching error about a command-line flag."""
        limit = self.max_positions[side] if isinstance(self.max_positions, tuple) else self.max_positions
        too_long = [i for i, tokens in enumerate(inputs) if limit is not None and len(tokens) > limit]
        if too_long:
            raise ValueError(
                f"{name} {too_long[:5]} are longer than the model's {limit} positions (</s> included): PALM "
                "does not truncate them"
            )

    def _generate_tokens(self, tokens: List[Tensor], *args, **kwargs):
        self._check_lengths("sources", tokens, 0)
        return super()._generate_tokens(tokens, *args, **kwargs)

    def _scoring_dataset(self, model: nn.Module, sources: List[Tensor], targets: List[Tensor]):
        self._check_lengths("sources", sources, 0)
        self._check_lengths("targets", targets, 1)
        return LanguagePairDataset(
            sources, np.array([len(s) for s in sources]), self.src_dict,
            targets, np.array([len(t) for t in targets]), self.tgt_dict,
            left_pad_source=self.task.cfg.left_pad_source, left_pad_target=self.task.cfg.left_pad_target,
        )  # fmt: skip

    def _target_log_probs(self, model: nn.Module, batch: Dict) -> List[Tensor]:
        net_output = model(**batch["net_input"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)  # B x T x V float32
        target = batch["target"]
        picked = lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # B x T
        return [row[real] for row, real in zip(picked, target.ne(self.tgt_dict.pad()))]

    def extract_features(self, tokens: Union[str, Tokens]) -> Tensor:
        """The encoder's final states ``h_l`` (what the decoder and the pointer read).

        Args:
            tokens: ids ``(S,)`` as :meth:`encode` returns them (ending with ``</s>``), raw text, or a
                list of either.
        Returns:
            ``(B, S, C)``, right-padded to the longest input with zeros on padding.
        """
        tokens, _ = self._as_ids(tokens if is_one_input(tokens) else list(tokens), "tokens")
        self._check_lengths("tokens", tokens, 0)
        pad = self.src_dict.pad()
        src = data_utils.collate_tokens(tokens, pad).to(self.device)  # B x S
        lengths = src.ne(pad).sum(1)
        encoder_out = self.model.encoder(src, src_lengths=lengths)
        states = encoder_out["encoder_out"][0].transpose(0, 1)  # B x S x C
        return states.masked_fill(src.eq(pad).unsqueeze(-1), 0)
