"""Task heads on top of the shared Transformer's final hidden states.

fairseq's ``sentence_prediction`` task calls ``model.register_classification_head(name, num_classes)``
and then ``model(**net_input, features_only=True, classification_head_name=name)``; the heads here
serve that protocol (sentence-level) and extractive QA (token-level spans).
"""

import torch
from fairseq import utils
from torch import Tensor, nn

START, END = 0, 1
# classes of extractive QA's answerability classifier (UniLMv2 §4.2), a 2-way classification head on [SOS]
ANSWERABLE, UNANSWERABLE = 0, 1
ANSWERABILITY_CLASSES = 2
NO_ANSWER_POSITION = 0  # [SOS]: a span that starts and ends there means "no answer in this window"


class SentenceClassificationHead(nn.Module):
    """BERT's pooler plus a classifier, read off the first ([SOS]) token.

    ``(B, T, C)`` features -> ``(B, num_classes)`` logits (regression: ``num_classes`` outputs).
    """

    def __init__(self, input_dim: int, inner_dim: int, num_classes: int, activation_fn: str, dropout: float):
        super().__init__()
        self.dense = nn.Linear(input_dim, inner_dim)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def forward(self, features: Tensor, **unused) -> Tensor:
        pooled = self.activation_fn(self.dense(self.dropout(features[:, 0])))  # B x inner
        return self.out_proj(self.dropout(pooled))


class SentencePooler(nn.Module):
    """BERT's pooler: ``tanh(dense(h_[SOS]))``, ``(B, T, C)`` features -> ``(B, C)``.

    A model imported from a checkpoint that has one (``BertModel``'s ``pooler``) keeps it, so that the
    export gives transformers' ``BertModel`` the source's ``pooler_output``. Nothing here trains it (the
    pre-training and fine-tuning objectives read token states only), so its parameters are frozen: the
    optimizer skips them and distributed training never waits for their gradients.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.requires_grad_(False)

    def forward(self, features: Tensor) -> Tensor:
        return torch.tanh(self.dense(features[:, 0]))


class SpanHead(nn.Module):
    """Start and end scores for every token (BERT's SQuAD head).

    ``(B, T, C)`` features -> ``(B, T, 2)`` logits; ``[..., START]`` scores a token as the span's
    first token, ``[..., END]`` as its last.
    """

    def __init__(self, input_dim: int):
        super().__init__()
        self.out_proj = nn.Linear(input_dim, 2)

    def forward(self, features: Tensor, **unused) -> Tensor:
        return self.out_proj(features)
