"""Generate with an exported s2s-ft model using only ``torch`` and ``transformers``.

    python generate.py MODEL_DIR "a source text" ["another one" ...]
    python generate.py MODEL_DIR --input sources.txt --beam 5 --lenpen 0.9 --no-repeat-ngram-size 3

``MODEL_DIR`` is a ``bert`` export of a model fine-tuned with s2s-ft (Bao et al. 2021): ``config.json``,
``model.safetensors``, ``vocab.txt``, ``tokenizer_config.json`` and ``generation.json``, which names the
fine-tuning method, the segment (token type) ids, the source limit and the search settings; options given
here override the search settings. One detokenized output is printed per input, in input order.

The decoding is the one the model was validated with (``fairseq-generate`` and the Python API of the
project that trained it), for models without a relative position bias:

* the source is BERT's WordPiece tokenization of the (NFC-normalized) text, cut to
  ``max_source_positions - 2`` pieces and laid out as "[CLS] source [SEP]" ([SOS] and [EOS]) with the
  source type id and positions ``0 .. S-1``; it sees only itself;
* masked and pseudo-masked methods: the target side follows at positions ``S, S+1, ...`` with the target
  type id. At each step the tokens generated so far are fed, each seeing the source and the targets up to
  itself, and a [MASK] after them, which sees the source, every generated token and itself; its output is
  the next token's distribution;
* causal method (s2s-ft §2.1, Figure 1a): the source's [SEP] moves to the target side as the start token:
  "[CLS] source" (positions ``0 .. S-2``) then [SEP] at ``S-1`` and the generated tokens after it, with
  the target type id and left-to-right attention; the last fed token's output predicts the next one;
* every step recomputes the whole sequence with an explicit attention mask (the project caches keys and
  values instead: the same numbers);
* fairseq's beam search (greedy is ``--beam 1``): at step 0 only the first hypothesis extends; each step
  takes the ``2 * beam`` best candidates, finishes those ending in [SEP] among the first ``beam`` (scored
  by their summed log-probability over ``L ** lenpen``, or GNMT's ``((5 + L) / 6) ** lenpen`` with
  ``--lenpen-style gnmt``, ``L`` counting the final [SEP]) and continues with the first ``beam`` others,
  until ``beam`` hypotheses are finished or the length limit forces [SEP]. [SEP] is banned before
  ``min_len`` tokens, [PAD] always. The limit is ``max_len_a * S + max_len_b`` tokens before the [SEP],
  kept inside the position table;
* ``--no-repeat-ngram-size n`` bans a token that would repeat an n-gram of the hypothesis, whose first
  token is the start symbol [SEP]; an n-gram holding one of ``--no-repeat-ngram-exempt`` is never banned.

Each input is decoded on its own; the project batches inputs, which changes nothing unless
``max_len_a`` is set (it then scales the longest source of the batch).
"""

import argparse
import json
import math
import os
import sys
import unicodedata
from typing import Dict, List, Sequence

import torch
from transformers import BertForMaskedLM, BertTokenizer

GENERATION_FILE = "generation.json"
METHODS = ("pseudo_masked", "masked", "causal")
LENPEN_STYLES = ("fairseq", "gnmt")
MODEL_KEYS = ("method", "source_type_id", "target_type_id", "max_source_positions", "max_target_positions")
# the search settings, with the project's defaults for those a generation.json leaves out
SEARCH_DEFAULTS = {
    "beam": 5, "lenpen": 1.0, "lenpen_style": "fairseq", "min_len": 1, "max_len_a": 0,
    "max_len_b": None, "no_repeat_ngram_size": 0, "no_repeat_ngram_exempt": [],
}  # fmt: skip
GNMT_OFFSET = 5.0


def read_settings(model_dir: str) -> Dict:
    """``generation.json`` with defaults filled in; refuses a model this decoding cannot run."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    if config.get("rel_pos_bins") or config.get("model_type", "bert") != "bert":
        raise ValueError(
            f"{model_dir}: not a bert export (model_type {config.get('model_type')!r}, rel_pos_bins "
            f"{config.get('rel_pos_bins')}); this decoding runs transformers' BERT, which has no relative "
            "position bias: decode a unilm or s2s-ft export with UniLM's own code"
        )
    path = os.path.join(model_dir, GENERATION_FILE)
    if not os.path.isfile(path):
        raise ValueError(f"{path} not found: only a model fine-tuned for generation (s2s-ft) has one")
    with open(path, encoding="utf-8") as f:
        settings = json.load(f)
    missing = [key for key in MODEL_KEYS if key not in settings]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    if settings["method"] not in METHODS:
        raise ValueError(f"{path}: unknown method {settings['method']!r} (expected one of {METHODS})")
    return {**SEARCH_DEFAULTS, "max_len_b": settings["max_target_positions"], **settings}


def load(model_dir: str, device: str = "cpu"):
    """The model (eval mode), its tokenizer and its decoding settings."""
    settings = read_settings(model_dir)
    model = BertForMaskedLM.from_pretrained(model_dir, attn_implementation="eager").to(device).eval()
    return model, BertTokenizer.from_pretrained(model_dir), settings


def encode_source(tokenizer, text: str, max_source_positions: int) -> List[int]:
    """The source ids "[CLS] pieces [SEP]", the pieces cut to leave room for [CLS] and [SEP]."""
    pieces = tokenizer.encode(unicodedata.normalize("NFC", text), add_special_tokens=False)
    return [tokenizer.cls_token_id] + pieces[: max_source_positions - 2] + [tokenizer.sep_token_id]


def next_token_log_probs(model, source: List[int], prefixes: torch.Tensor, ids: Dict, settings: Dict):
    """Log-probabilities ``(rows, V)`` of the token after each row of ``prefixes`` ``(rows, t)``."""
    rows = prefixes.size(0)
    device = model.device
    source = torch.tensor(source, device=device).expand(rows, -1)
    if settings["method"] == "causal":  # "[CLS] source" | "[SEP] t_1 .. t_t"
        context, target = source[:, :-1], torch.cat([source[:, -1:], prefixes], 1)
    else:  # "[CLS] source [SEP]" | "t_1 .. t_t [MASK]"
        context, target = source, torch.cat([prefixes, prefixes.new_full((rows, 1), ids["mask"])], 1)
    n_context, length = context.size(1), context.size(1) + target.size(1)
    # every token sees the whole context; a target-side token also sees those up to itself (tril), and
    # no context token sees the target side (it is above the diagonal)
    visible = torch.ones(length, length, dtype=torch.bool, device=device).tril()
    visible[:, :n_context] = True
    bias = torch.zeros(length, length, dtype=model.dtype, device=device)
    bias.masked_fill_(~visible, torch.finfo(model.dtype).min)
    types = torch.full((rows, length), settings["target_type_id"], device=device)
    types[:, :n_context] = settings["source_type_id"]
    with torch.no_grad():
        hidden = model.bert(
            input_ids=torch.cat([context, target], 1),
            token_type_ids=types,
            position_ids=torch.arange(length, device=device).expand(rows, -1),
            attention_mask=bias.expand(rows, 1, -1, -1),
        ).last_hidden_state
        logits = model.cls(hidden[:, -1])  # the MLM head on the predicting position only
    return torch.log_softmax(logits.float(), dim=-1)


def banned_tokens(hypothesis: Sequence[int], size: int, exempt: set) -> set:
    """Tokens that would repeat an n-gram of ``hypothesis`` (start symbol first), exempt n-grams spared."""
    if size == 1:
        return {token for token in hypothesis[1:] if token not in exempt}
    if len(hypothesis) < size:
        return set()
    context = list(hypothesis[len(hypothesis) - size + 1 :])  # the n - 1 tokens the next one follows
    if exempt.intersection(context):
        return set()
    return {
        hypothesis[i + size - 1]
        for i in range(len(hypothesis) - size + 1)
        if list(hypothesis[i : i + size - 1]) == context and hypothesis[i + size - 1] not in exempt
    }


def length_penalty(length: int, settings: Dict) -> float:
    """What a finished hypothesis' summed log-probability is divided by; ``length`` counts its [SEP]."""
    if settings["lenpen_style"] == "gnmt":
        return ((GNMT_OFFSET + length) / (GNMT_OFFSET + 1)) ** settings["lenpen"]
    return length ** settings["lenpen"]


def beam_search(model, source: List[int], ids: Dict, settings: Dict) -> List[Dict]:
    """The finished hypotheses of ``source``, best first: ``tokens`` (ending with [SEP]) and ``score``."""
    beam, eos = settings["beam"], ids["eos"]
    room = model.config.max_position_embeddings - len(source) - 1  # the target's rows of the position table
    max_len = min(int(settings["max_len_a"] * len(source) + settings["max_len_b"]), room)
    if settings["min_len"] > max_len:
        raise ValueError(f"min_len {settings['min_len']} cannot be met: at most {max_len} tokens fit")
    exempt = set(ids["exempt"])
    hypotheses = torch.full((beam, 1), eos, dtype=torch.long, device=model.device)  # start symbol first
    scores = torch.zeros(beam, device=model.device)
    finished: List[Dict] = []
    for step in range(max_len + 1):
        lprobs = next_token_log_probs(model, source, hypotheses[:, 1:], ids, settings)
        lprobs[lprobs != lprobs] = -math.inf
        lprobs[:, ids["pad"]] = -math.inf
        if step >= max_len:  # only [SEP] is left
            lprobs[:, :eos] = -math.inf
            lprobs[:, eos + 1 :] = -math.inf
        if step < settings["min_len"]:
            lprobs[:, eos] = -math.inf
        if settings["no_repeat_ngram_size"] > 0:
            for row, hypothesis in enumerate(hypotheses.tolist()):
                banned = banned_tokens(hypothesis, settings["no_repeat_ngram_size"], exempt)
                lprobs[row, sorted(banned)] = -math.inf
        # the 2 * beam best extensions (at step 0 of the first row: all rows are the start symbol)
        candidates = lprobs[:1] if step == 0 else lprobs + scores.unsqueeze(1)
        flat = candidates.view(-1)
        top_scores, top = flat.topk(min(2 * beam, flat.numel() - 1))
        rows, tokens = top // lprobs.size(1), top % lprobs.size(1)
        ends = tokens.eq(eos) & top_scores.ne(-math.inf)
        for i in range(min(beam, len(top))):  # only [SEP] among the first beam candidates finishes
            if ends[i] and len(finished) < beam:
                score = float(top_scores[i]) / length_penalty(step + 1, settings)
                finished.append({"tokens": hypotheses[rows[i], 1:].tolist() + [eos], "score": score})
        if len(finished) == beam or step == max_len:
            break
        kept = (~ends).nonzero().squeeze(1)[:beam]  # the first beam candidates that go on
        hypotheses = torch.cat([hypotheses[rows[kept]], tokens[kept].unsqueeze(1)], 1)
        scores = top_scores[kept]
    return sorted(finished, key=lambda hypothesis: -hypothesis["score"])


def special_ids(tokenizer, settings: Dict) -> Dict:
    """The ids decoding needs: [SEP] (start and end symbol), [PAD], [MASK] and the exempt tokens."""
    exempt = settings["no_repeat_ngram_exempt"]
    exempt = exempt.split() if isinstance(exempt, str) else list(exempt)
    vocab = tokenizer.get_vocab()
    missing = [token for token in exempt if token not in vocab]
    if missing:
        raise ValueError(f"no_repeat_ngram_exempt: {missing} not in the vocabulary")
    return {
        "eos": tokenizer.sep_token_id, "pad": tokenizer.pad_token_id, "mask": tokenizer.mask_token_id,
        "exempt": [vocab[token] for token in exempt],
    }  # fmt: skip


def generate(model, tokenizer, texts: Sequence[str], settings: Dict) -> List[Dict]:
    """The best hypothesis of each text: ``tokens`` (ids ending with [SEP]), ``score`` and ``text``."""
    if settings["beam"] < 1:
        raise ValueError(f"beam {settings['beam']}: needs at least 1")
    if settings["lenpen_style"] not in LENPEN_STYLES:
        raise ValueError(f"lenpen_style {settings['lenpen_style']!r}: expected one of {LENPEN_STYLES}")
    ids = special_ids(tokenizer, settings)
    results = []
    for text in texts:
        source = encode_source(tokenizer, text, settings["max_source_positions"])
        best = beam_search(model, source, ids, settings)[0]
        results.append(dict(best, text=detokenize(tokenizer, best["tokens"])))
    return results


def detokenize(tokenizer, tokens: Sequence[int]) -> str:
    """Ids -> text: [CLS] and [SEP] dropped, word pieces joined ("hel ##lo" -> "hello")."""
    words: List[str] = []
    skipped = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    for piece in tokenizer.convert_ids_to_tokens([t for t in tokens if t not in skipped]):
        if piece.startswith("##") and len(piece) > 2 and words:
            words[-1] += piece[2:]
        else:
            words.append(piece[2:] if piece.startswith("##") and len(piece) > 2 else piece)
    return " ".join(words)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", help="the exported model folder")
    parser.add_argument("texts", nargs="*", help="source texts (or --input)")
    parser.add_argument("--input", help="a file of source texts, one per line")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--beam", type=int)
    parser.add_argument("--lenpen", type=float)
    parser.add_argument("--lenpen-style", choices=LENPEN_STYLES)
    parser.add_argument("--min-len", type=int)
    parser.add_argument("--max-len-a", type=float)
    parser.add_argument("--max-len-b", type=int)
    parser.add_argument("--no-repeat-ngram-size", type=int)
    parser.add_argument("--no-repeat-ngram-exempt", nargs="*", help="tokens, e.g. '.'")
    args = parser.parse_args(argv)
    texts = list(args.texts)
    if args.input:
        # utf-8-sig: a byte-order mark at the start is not text; newline="\n": a lone \r stays in its line
        with open(args.input, encoding="utf-8-sig", newline="\n") as f:
            texts += [line.rstrip("\r\n") for line in f]
    if not texts:
        parser.error("give source texts or --input FILE")
    model, tokenizer, settings = load(args.model_dir, args.device)
    given = {key: value for key, value in vars(args).items() if key in settings and value is not None}
    settings.update(given)
    for result in generate(model, tokenizer, texts, settings):
        print(result["text"])


if __name__ == "__main__":
    sys.exit(main())
