"""Python API for ``palm`` checkpoints: load in one call, then generate continuations or answers from text.

    from unilm_fairseq import PALMHubInterface
    palm = PALMHubInterface.from_pretrained("checkpoints", checkpoint_file="checkpoint_best.pt",
                                            data_name_or_path="data-bin", bpe="sentencepiece",
                                            sentencepiece_model="spm.model")
    palm.generate(["a context to continue"], beam=5, lenpen=1.0, no_repeat_ngram_size=3)
    palm.generate(["a context"], beam=5, lenpen=1.0, lenpen_style="gnmt", no_repeat_ngram_size=3,
                  no_repeat_ngram_exempt=["."])  # palm_seq2seq's --lenpen-style, --no-repeat-ngram-exempt

``PALMModel.from_pretrained(...)`` returns the same object. Batches go through the task's
``build_dataset_for_inference`` and ``inference_step``, the path of ``fairseq-interactive`` (see
:class:`unilm_fairseq.hub.UniLMHubInterface`, whose loading, encoding and generation it shares).
"""

from typing import Union

import torch
from fairseq.data import data_utils
from torch import Tensor

from .unilm import Tokens, UniLMHubInterface


class PALMHubInterface(UniLMHubInterface):
    """A loaded ``palm`` model (``--task palm_seq2seq``) with its dictionary and text encoder."""

    def extract_features(self, tokens: Union[str, Tokens]) -> Tensor:
        """The encoder's final states ``h_l`` (what the decoder and the pointer read).

        Args:
            tokens: ids ``(S,)`` as :meth:`encode` returns them (ending with ``</s>``), raw text, or a
                list of either.
        Returns:
            ``(B, S, C)``, right-padded to the longest input with zeros on padding.
        """
        if isinstance(tokens, str) or (torch.is_tensor(tokens) and tokens.dim() == 1):
            tokens = [tokens]
        tokens = [self.encode(t) if isinstance(t, str) else t for t in tokens]
        pad = self.src_dict.pad()
        src = data_utils.collate_tokens(tokens, pad).to(self.device)  # B x S
        lengths = src.ne(pad).sum(1)
        encoder_out = self.model.encoder(src, src_lengths=lengths)
        states = encoder_out["encoder_out"][0].transpose(0, 1)  # B x S x C
        return states.masked_fill(src.eq(pad).unsqueeze(-1), 0)
