"""The ``unilmv2`` model: one shared Transformer with a tied LM head.

Architectures only fill defaults the user left unset; the base defaults are :class:`UniLMv2Config`'s.
"""

import logging
from dataclasses import dataclass, field
from typing import Optional, Tuple

import torch
from fairseq import utils
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from torch import Tensor, nn

from .. import masks, seq2seq_layout
from ..checkpoint.upgrade import upgrade_state
from ..hub.base import UniLMHubInterface
from ..modules import UniLMLMHead, UniLMTransformer, transformer
from ..modules.heads import SentenceClassificationHead, SentencePooler, SpanHead
from .architecture_presets import dataclass_defaults, fill_unset, leave_dataclass_registry
from .generation import UniLMIncrementalDecoder, UniLMSourceEncoder, source_positions

logger = logging.getLogger(__name__)

NSP_HEAD = "nsp"  # the classification head UniLM v1 pre-training adds for next-sentence prediction
NSP_CLASSES = 2  # is next, is not

# state-dict keys of the model's parameters
TRANSFORMER = "transformer."
LM_HEAD = "lm_head."
TOKEN_TABLE = TRANSFORMER + transformer.TOKEN_TABLE
POSITION_TABLE = TRANSFORMER + transformer.POSITION_TABLE
SEGMENT_TABLE = TRANSFORMER + transformer.SEGMENT_TABLE
EMBEDDING_LAYER_NORM = TRANSFORMER + transformer.EMBEDDING_LAYER_NORM
EMBEDDING_PROJECTION = TRANSFORMER + transformer.EMBEDDING_PROJECTION
RELATIVE_POSITION_BIAS = TRANSFORMER + transformer.RELATIVE_POSITION_BIAS
LAYERS = TRANSFORMER + transformer.LAYERS
LM_HEAD_OUTPUT = LM_HEAD + transformer.LM_HEAD_OUTPUT  # the token table itself (tied)
HEADS = ("classification_heads.", "span_heads.")  # task heads, registered by name
POOLER = "pooler."  # BERT's [CLS] pooler, kept from an imported model for the export (frozen)
POOLER_WEIGHT = POOLER + "dense.weight"


def layer_key(layer: int, part: str) -> str:
    """The key of ``part`` (e.g. ``"fc1.weight"``) of Transformer layer ``layer``."""
    return f"{LAYERS}{layer}.{part}"


@dataclass
class UniLMv2Config(FairseqDataclass):
    encoder_layers: int = field(default=12, metadata={"help": "number of Transformer layers"})
    encoder_embed_dim: int = field(default=768, metadata={"help": "hidden size"})
    token_embed_dim: int = field(
        default=0,
        metadata={
            "help": "width of the token/position/segment embeddings when it differs from the hidden size "
            "(ELECTRA); a linear layer projects them up and the LM head projects back. 0: the hidden size"
        },
    )
    encoder_ffn_embed_dim: int = field(default=3072, metadata={"help": "feed-forward inner size"})
    encoder_attention_heads: int = field(default=12, metadata={"help": "attention heads per layer"})
    activation_fn: ChoiceEnum(utils.get_available_activation_fns()) = field(
        default="gelu", metadata={"help": "activation of the feed-forward and LM-head layers"}
    )
    dropout: float = field(default=0.1, metadata={"help": "dropout on embeddings and residual branches"})
    attention_dropout: float = field(default=0.1, metadata={"help": "dropout on attention probabilities"})
    activation_dropout: float = field(default=0.0, metadata={"help": "dropout after the FFN activation"})
    max_positions: int = field(default=512, metadata={"help": "size of the absolute position table"})
    num_segments: int = field(default=2, metadata={"help": "segment (token type) embeddings; 0 disables"})
    rel_pos_bins: int = field(
        default=32, metadata={"help": "relative position buckets (T5-style, bidirectional); 0 disables"}
    )
    max_rel_pos: int = field(
        default=128, metadata={"help": "distance beyond which relative positions share a bucket"}
    )
    layernorm_eps: float = field(default=1e-12, metadata={"help": "LayerNorm epsilon (BERT uses 1e-12)"})
    checkpoint_activations: bool = field(
        default=False,
        metadata={
            "help": "checkpoint activations at each layer: keep only each layer's inputs and recompute the "
            "rest in the backward pass (less memory, about one more forward of compute); only when "
            "gradients are recorded, never in validation or decoding"
        },
    )
    pooler_activation_fn: ChoiceEnum(utils.get_available_activation_fns()) = field(
        default="tanh",
        metadata={"help": "activation of the [SOS] pooler in classification heads (BERT: tanh)"},
    )
    pooler_dropout: float = field(default=0.1, metadata={"help": "dropout in classification heads"})
    seq2seq_method: seq2seq_layout.METHOD_CHOICES = field(
        default=seq2seq_layout.FinetuneMethod.PSEUDO_MASKED.value,
        metadata={
            "help": "the s2s-ft method the model was fine-tuned with (how the decoder asks for the next "
            "token); --task unilm_seq2seq records it from --finetune-method (seq2seq_layout.Seq2SeqSpec)"
        },
    )
    seq2seq_source_positions: int = field(
        default=0,
        metadata={"help": "--max-source-positions of s2s-ft fine-tuning, recorded by --task unilm_seq2seq; "
                  "generation uses it when the option is not given (0: none recorded)"},
    )  # fmt: skip
    seq2seq_target_positions: int = field(
        default=0, metadata={"help": "--max-target-positions of s2s-ft fine-tuning, recorded likewise"}
    )
    seq2seq_source_segment: int = field(
        default=seq2seq_layout.SOURCE_SEGMENT,
        metadata={"help": "segment id of the source in s2s-ft layouts and decoding (UniLM v1 models: 4); "
                  "--task unilm_seq2seq records it from --seq2seq-segment-ids when training and "
                  "generation reads it from the checkpoint"},
    )  # fmt: skip
    seq2seq_target_segment: int = field(
        default=seq2seq_layout.TARGET_SEGMENT,
        metadata={"help": "segment id of the target side, mask tokens included (UniLM v1 models: 5); "
                  "recorded likewise"},
    )  # fmt: skip


@register_model("unilmv2", dataclass=UniLMv2Config)
class UniLMv2Model(BaseFairseqModel):
    """Shared Transformer over explicit tokens, segments, positions and masks.

    ``transformer`` and ``lm_head`` own every parameter. ``encoder`` and
    ``decoder`` are parameter-free views over them that give fairseq's
    ``SequenceGenerator`` a source encoder and an incremental decoder.
    """

    def __init__(self, cfg: UniLMv2Config, dictionary):
        super().__init__()
        self.cfg = cfg
        self.dictionary = dictionary
        self.transformer = UniLMTransformer(cfg, len(dictionary), dictionary.pad())
        self.lm_head = UniLMLMHead(
            cfg.encoder_embed_dim,
            cfg.activation_fn,
            cfg.layernorm_eps,
            weight=self.transformer.embeddings.tokens.weight,
        )
        self.classification_heads = nn.ModuleDict()
        self.span_heads = nn.ModuleDict()
        self.pooler: Optional[SentencePooler] = None  # see add_pooler
        self.apply(init_bert_params)
        # the s2s-ft spec the config records (--task unilm_seq2seq settles and writes it)
        self.seq2seq_spec = seq2seq_layout.Seq2SeqSpec.recorded(cfg)
        self.encoder = UniLMSourceEncoder(dictionary, self.transformer, self.lm_head, self.seq2seq_spec)
        self.decoder = UniLMIncrementalDecoder(dictionary, self.transformer, self.lm_head, self.seq2seq_spec)

    @classmethod
    def build_model(cls, cfg, task):
        return cls(cfg, task.source_dictionary)

    @classmethod
    def from_pretrained(
        cls, model_dir, checkpoint_file=None, data_name_or_path=".", **kwargs
    ) -> UniLMHubInterface:
        """Load a checkpoint for generation from text: a :class:`~unilm_fairseq.hub.UniLMHubInterface`
        (fairseq's ``from_pretrained`` likewise returns a ``GeneratorHubInterface``); the arguments are
        :meth:`UniLMHubInterface.from_pretrained`'s. ``checkpoint_file`` defaults to the one a model
        folder's ``generation.json`` names, else ``checkpoint_best.pt``."""
        return UniLMHubInterface.from_pretrained(model_dir, checkpoint_file, data_name_or_path, **kwargs)

    def max_positions(self):
        return self.cfg.max_positions

    def max_decoder_positions(self):
        return self.cfg.max_positions

    def register_classification_head(
        self,
        name: str,
        num_classes: int,
        inner_dim: Optional[int] = None,
        dropout: Optional[float] = None,
        **unused,
    ):
        """Add a sentence-level head on the [SOS] vector (fairseq's ``sentence_prediction`` protocol).

        ``dropout`` defaults to ``--pooler-dropout``.
        """
        if name in self.classification_heads:
            logger.warning("re-registering classification head %r with %d classes", name, num_classes)
        head = SentenceClassificationHead(
            self.cfg.encoder_embed_dim,
            inner_dim or self.cfg.encoder_embed_dim,
            num_classes,
            str(self.cfg.pooler_activation_fn),
            self.cfg.pooler_dropout if dropout is None else dropout,
        )
        head.apply(init_bert_params)
        self.classification_heads[name] = head

    def build_nsp_head(self) -> None:
        """Add the next-sentence-prediction head (UniLM v1 pre-training) if missing.

        BERT's NSP head: the tanh pooler on [SOS] and a 2-way classifier, no dropout of its own.
        Checkpoints without it load into a model with it and the other way round, like any head.
        """
        if NSP_HEAD not in self.classification_heads:
            self.register_classification_head(NSP_HEAD, NSP_CLASSES, dropout=0.0)

    @property
    def nsp_head(self) -> Optional[nn.Module]:
        return self.classification_heads[NSP_HEAD] if NSP_HEAD in self.classification_heads else None

    def add_pooler(self) -> None:
        """Give the model BERT's sentence pooler (:class:`~unilm_fairseq.modules.heads.SentencePooler`), on
        the device and in the dtype of its weights, unless it has one.

        Loading a checkpoint that holds ``pooler.*`` adds it (:meth:`upgrade_state_dict_named`), so a pooler
        imported with a model stays with every checkpoint trained from it, and the export writes it out.
        Building it leaves the global random state as it was, so training draws what it drew without it.
        """
        if self.pooler is None:
            with torch.random.fork_rng(devices=[]):  # its values come from a checkpoint: draw nothing
                pooler = SentencePooler(self.cfg.encoder_embed_dim)
                pooler.apply(init_bert_params)
            self.pooler = pooler.to(self.transformer.embeddings.tokens.weight)

    def register_span_head(self, name: str):
        """Add a token-level start/end head (extractive QA)."""
        if name in self.span_heads:
            logger.warning("re-registering span head %r", name)
        head = SpanHead(self.cfg.encoder_embed_dim)
        head.apply(init_bert_params)
        self.span_heads[name] = head

    def forward(
        self,
        tokens: Optional[Tensor] = None,
        segments: Optional[Tensor] = None,
        positions: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None,
        masked_tokens: Optional[Tensor] = None,
        features_only: bool = False,
        context_len: Optional[int] = None,
        classification_head_name: Optional[str] = None,
        span_head_name: Optional[str] = None,
        answerability_head_name: Optional[str] = None,
        src_tokens: Optional[Tensor] = None,
        nsp: bool = False,
        **unused,
    ):
        """
        Args:
            tokens, segments, positions: ``(B, T)`` long, a packed layout.
            attn_mask: ``(B, T, T)`` bool visibility (see :mod:`unilm_fairseq.masks`).
            masked_tokens: ``(B, T)`` bool; when given, only these positions go
                through the LM head, flattened in row-major order.
            context_len: when the first ``context_len`` columns see only each other
                (PMLM batches), they run first and the rest reuses their keys and values.
            classification_head_name: return that head's ``(B, num_classes)`` logits.
            span_head_name: return that head's ``(B, T, 2)`` start/end logits.
            answerability_head_name: with ``span_head_name``, also return
                ``extra["answerability_logits"]`` ``(B, 2)``, that classification head's scores of the
                [SOS] vector (extractive QA's answerability classifier, UniLMv2 §4.2).
            src_tokens: ``(B, T)`` "[SOS] A [EOS] (B [EOS])", padded; used when ``tokens`` is not
                given (fairseq's ``sentence_prediction`` batches): bidirectional attention over the
                real tokens, positions from 0, segment 1 after the first [EOS].
            nsp: also return ``extra["nsp_logits"]`` ``(B, 2)`` from the [SOS] vector (needs
                :meth:`build_nsp_head`).
            unused: generation inputs (``src_lengths``) batches also carry.
        Returns:
            logits ``(N, V)`` (or ``(B, T, V)``), features ``(B, T, C)`` with
            ``features_only``, or a head's logits; and an extra dict.
        """
        if tokens is None:
            if src_tokens is None:
                raise ValueError("forward needs tokens (with segments, positions, attn_mask) or src_tokens")
            tokens, segments, positions, attn_mask = self.sentence_pair_inputs(src_tokens)
        if context_len is not None and context_len < tokens.size(1):
            features = self.transformer.forward_after_context(
                tokens, segments, positions, attn_mask, context_len
            )
        else:
            features, _ = self.transformer(tokens, segments, positions, attn_mask)
        if classification_head_name is not None:
            return self.classification_heads[classification_head_name](features), {}
        if span_head_name is not None:
            extra = {}
            if answerability_head_name is not None:
                extra["answerability_logits"] = self.classification_heads[answerability_head_name](features)
            return self.span_heads[span_head_name](features), extra
        extra = {}
        if nsp:
            if self.nsp_head is None:
                raise ValueError("nsp=True needs the NSP head: call build_nsp_head() (--task unilm does)")
            extra["nsp_logits"] = self.nsp_head(features)  # B x 2
        if features_only:
            return features, extra
        if masked_tokens is not None:
            features = features[masked_tokens]  # N x C
        return self.lm_head(features), extra

    def sentence_pair_inputs(self, src_tokens: Tensor):
        """Segments, positions and a bidirectional mask for padded "[SOS] A [EOS] (B [EOS])" rows."""
        padding = src_tokens.eq(self.dictionary.pad())
        segments = seq2seq_layout.pair_segments(src_tokens, self.dictionary.eos(), self.cfg.num_segments)
        return src_tokens, segments, source_positions(padding), masks.padded_bidirectional_mask(padding)

    def upgrade_state_dict_named(self, state_dict, name):
        """Fit a checkpoint to this model's task heads and position table
        (:func:`unilm_fairseq.checkpoint.upgrade.upgrade_state`); a checkpoint with a pooler adds one."""
        super().upgrade_state_dict_named(state_dict, name)
        prefix = name + "." if name else ""
        if prefix + POOLER_WEIGHT in state_dict:
            self.add_pooler()
        elif self.pooler is not None:  # a checkpoint without one: the model's own stays
            for key, value in self.pooler.state_dict(prefix=POOLER).items():
                state_dict[prefix + key] = value
        upgrade_state(state_dict, self.state_dict(), prefix, position_table=POSITION_TABLE, heads=HEADS)


def check_seq2seq_segments(segments: Tuple[int, int], rows: int) -> None:
    """A clear error when an s2s-ft segment id has no row in a segment table of ``rows`` rows
    (``--task unilm_seq2seq`` checks before it builds a model; without a segment table the ids are unused)."""
    if rows > 0 and (min(segments) < 0 or max(segments) >= rows):
        raise ValueError(
            f"seq2seq segment ids {segments} need segment embeddings 0..{max(segments)}, but the model has "
            f"{rows} (--num-segments); UniLM v1's ids 4-5 need --num-segments 6 (--arch unilm_v1_base), "
            "other models use --seq2seq-segment-ids 0-1"
        )


def base_architecture(args):
    """The base model (12 layers, 768 hidden): :class:`UniLMv2Config`'s defaults; fills only unset fields."""
    fill_unset(args, dataclass_defaults(UniLMv2Config))


def sizes(layers: int, hidden: int, ffn: int, heads: int) -> dict:
    """An architecture's Transformer sizes as options."""
    return {
        "encoder_layers": layers,
        "encoder_embed_dim": hidden,
        "encoder_ffn_embed_dim": ffn,
        "encoder_attention_heads": heads,
    }


LARGE = sizes(24, 1024, 4096, 16)  # BERT-large, shared by unilmv2_large and UniLM v1's unilm_v1_large


# fairseq-hydra-train: a config's model._name applies its architecture's presets (architecture_presets.py)
leave_dataclass_registry("unilmv2", base_architecture)


@register_model_architecture("unilmv2", "unilmv2_base")
def unilmv2_base(args):
    base_architecture(args)


@register_model_architecture("unilmv2", "unilmv2_large")
def unilmv2_large(args):
    fill_unset(args, LARGE)
    base_architecture(args)


@register_model_architecture("unilmv2", "unilmv2_small")
def unilmv2_small(args):
    fill_unset(args, sizes(6, 384, 1536, 12))
    base_architecture(args)


@register_model_architecture("unilmv2", "unilmv2_tiny")
def unilmv2_tiny(args):
    """For tests and the CPU demo: distinct small sizes so shape bugs show."""
    fill_unset(args, {**sizes(3, 64, 96, 4), "max_positions": 256})
    base_architecture(args)
