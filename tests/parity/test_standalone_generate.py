"""The standalone generation script of a ``bert`` export against the project's own decoding.

``unilm_fairseq/hf_export/standalone_generate.py`` (copied into an export as ``generate.py``) decodes with
plain ``transformers``; here it must give, token for token and with the same scores, what the Python API's
``generate`` (fairseq's ``SequenceGenerator`` over the plugin's decoder) gives for the same model: tiny
fine-tuned ``unilmv2`` checkpoints of each s2s-ft method, with a WordPiece vocabulary and no relative
position bias, exported with ``export_checkpoint(..., format="bert")``. The decoding settings cover greedy
and beam search, ``min_len``, n-gram blocking with and without an exempt token, and both length penalties;
the model's outputs are varied enough that each of those settings changes some output
(:func:`test_each_setting_changes_some_output`), so agreement is not agreement of constants. The script
also runs as a program where neither ``unilm_fairseq`` nor ``fairseq`` can be imported.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from unilm_fairseq import UniLMModel
from unilm_fairseq.data.dictionary import TokenListDictionary
from unilm_fairseq.hf_export import export_checkpoint
from unilm_fairseq.hf_export import standalone_generate as standalone
from unilm_fairseq.modules.ngram_block import repeated_ngram_bans

from ..helpers.hf import wordpiece_tokens
from ..helpers.hub import CHECKPOINT, save_seq2seq_checkpoint
from ..helpers.seq2seq import sharpened_model

pytestmark = pytest.mark.usefixtures("one_thread")

METHODS = ("pseudo_masked", "masked", "causal")
MAX_SOURCE, MAX_TARGET = 12, 10
# the sharpened tiny model, pushed towards "." and [SEP]: outputs of several lengths, "." repeated
DOT_BIAS, EOS_BIAS = 2.0, 1.0
SCORE_TOL = 1e-5  # cached decoding against full recomputation (measured below 1e-6)
TEXTS = [
    "w1 w3 w5",
    "w7p2 w9 . w11 w13",
    "w15",
    "w17 w19 w21 , w23 w25p4 w27 w29 w31 w33 w35 w37 w39",  # longer than MAX_SOURCE: truncated
    "W3 w3 w3 . w5",
]
# what the test's generation.json holds; each setting below overrides some of it
SEARCH = dict(
    beam=5, lenpen=1.0, lenpen_style="fairseq", min_len=0, max_len_a=0, max_len_b=MAX_TARGET,
    no_repeat_ngram_size=0, no_repeat_ngram_exempt=[],
)  # fmt: skip
# the papers' conventions together
PAPERS = dict(
    beam=3, min_len=2, lenpen=0.6, lenpen_style="gnmt", no_repeat_ngram_size=3, no_repeat_ngram_exempt=["."]
)
SETTINGS = {
    "greedy": dict(beam=1),
    "beam5": {},
    "beam5-min-len": dict(min_len=4),
    "unigram-block": dict(no_repeat_ngram_size=1),
    "unigram-block-exempt": dict(no_repeat_ngram_size=1, no_repeat_ngram_exempt=["."]),
    "bigram-block": dict(no_repeat_ngram_size=2),
    "bigram-block-exempt": dict(no_repeat_ngram_size=2, no_repeat_ngram_exempt=["."]),
    "lenpen-fairseq": dict(lenpen=2.0),
    "lenpen-gnmt": dict(lenpen=2.0, lenpen_style="gnmt"),
    "beam3-papers": PAPERS,
    "greedy-min-len-blocked": dict(beam=1, min_len=3, no_repeat_ngram_size=2),
    # a limit that grows with the source (3 to 8 tokens here); the hub decodes one input per batch then
    "max-len-a": dict(max_len_a=0.5, max_len_b=2),
}
# pairs of settings that must give different outputs for some input: each setting matters
EFFECTS = [
    ("greedy", "beam5"),
    ("beam5", "beam5-min-len"),
    ("beam5", "bigram-block"),
    ("unigram-block", "unigram-block-exempt"),
    ("bigram-block", "bigram-block-exempt"),
    ("lenpen-fairseq", "lenpen-gnmt"),
    ("beam5", "max-len-a"),
]
# run by the subprocess test: whatever is not given comes from generation.json
CLI_OPTIONS = dict(beam=3, lenpen=0.6, lenpen_style="gnmt", min_len=2, no_repeat_ngram_size=2)
CLI_EXEMPT = ["."]
# runs a script with unilm_fairseq and fairseq impossible to import: python -I -c BLOCKER script args...
BLOCKER = """
import runpy, sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("unilm_fairseq", "fairseq"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Blocked())
script = sys.argv.pop(1)
sys.argv[0] = script
runpy.run_path(script, run_name="__main__")
"""


def write_generation_json(model_dir: str, checkpoint: str, search: dict) -> None:
    """The model folder's ``generation.json`` in the export's schema: the method, type ids and limits the
    checkpoint records, then the search settings."""
    cfg = torch.load(checkpoint, map_location="cpu", weights_only=False)["cfg"]["model"]
    settings = {
        "method": cfg["seq2seq_method"],
        "source_type_id": cfg["seq2seq_source_segment"],
        "target_type_id": cfg["seq2seq_target_segment"],
        "max_source_positions": cfg["seq2seq_source_positions"],
        "max_target_positions": cfg["seq2seq_target_positions"],
        **search,
    }
    with open(os.path.join(model_dir, standalone.GENERATION_FILE), "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2)


def build(folder, method: str) -> dict:
    """A fine-tuned checkpoint of ``method``, its ``bert`` export and the hub over the checkpoint."""
    dictionary = TokenListDictionary.from_tokens(wordpiece_tokens() + [".", ","])
    model = sharpened_model(dictionary, method, rel_pos_bins=0)
    with torch.no_grad():
        model.lm_head.bias[dictionary.index(".")] += DOT_BIAS
        model.lm_head.bias[dictionary.eos()] += EOS_BIAS
    checkpoint = save_seq2seq_checkpoint(folder / "checkpoint", model, MAX_SOURCE, MAX_TARGET)
    exported = export_checkpoint(checkpoint, str(folder / "bert"), format="bert").out_dir
    write_generation_json(exported, checkpoint, SEARCH)
    shutil.copy(os.path.join(exported, "vocab.txt"), folder / "checkpoint")  # the hub's --bpe wordpiece
    hub = UniLMModel.from_pretrained(str(folder / "checkpoint"), CHECKPOINT, bpe="wordpiece")
    return {"hub": hub, "model_dir": exported, "standalone": standalone.load(exported)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``built(method)``: :func:`build`'s result, made once per method."""
    root, cache = tmp_path_factory.mktemp("standalone"), {}

    def get(method: str) -> dict:
        if method not in cache:
            cache[method] = build(root / method, method)
        return cache[method]

    return get


def hub_hypotheses(hub, options: dict):
    """Per text, the Python API's ``beam`` finished hypotheses, best first: ``(tokens, score)``."""
    search = {**SEARCH, **options}
    # max_len_a scales the batch's longest source: one input per batch, as the script decodes
    batch_size = 1 if search["max_len_a"] else None
    sources = [hub.encode(text) for text in TEXTS]
    hypotheses = hub.generate(sources, nbest=search["beam"], batch_size=batch_size, **search)
    return [[(h["tokens"].tolist(), float(h["score"])) for h in per_text] for per_text in hypotheses]


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("method", METHODS)
def test_standalone_equals_the_hub(built, method, setting):
    parts = built(method)
    hub, (model, tokenizer, settings) = parts["hub"], parts["standalone"]
    assert settings["method"] == method
    settings = {**settings, **SETTINGS[setting]}
    expected = hub_hypotheses(hub, SETTINGS[setting])
    ids = standalone.special_ids(tokenizer, settings)
    for text, hypotheses in zip(TEXTS, expected):  # every finished hypothesis, in order
        source = standalone.encode_source(tokenizer, text, MAX_SOURCE)
        found = standalone.beam_search(model, source, ids, settings)
        assert [h["tokens"] for h in found] == [tokens for tokens, _ in hypotheses], text
        for hypothesis, (_, score) in zip(found, hypotheses):
            assert abs(hypothesis["score"] - score) < SCORE_TOL, (hypothesis["score"], score)
        assert all(len(h["tokens"]) - 1 >= settings["min_len"] for h in found)
    results = standalone.generate(model, tokenizer, TEXTS, settings)
    best = [hypotheses[0][0] for hypotheses in expected]
    assert [r["tokens"] for r in results] == best
    assert [r["text"] for r in results] == [hub.decode(torch.tensor(tokens)) for tokens in best]


@pytest.mark.parametrize("method", METHODS)
def test_each_setting_changes_some_output(built, method):
    """The outputs are far from trivial, so equality above means something."""
    hub = built(method)["hub"]
    outputs = {name: [h[0][0] for h in hub_hypotheses(hub, options)] for name, options in SETTINGS.items()}
    generated = {token for per_text in outputs.values() for tokens in per_text for token in tokens[:-1]}
    assert len(generated) >= 2, generated
    assert len({len(tokens) for tokens in outputs["beam5"]}) >= 3, outputs["beam5"]
    for first, second in EFFECTS:
        assert outputs[first] != outputs[second], (first, second)


def test_ngram_bans_equal_the_projects():
    """The blocker's rule on random prefixes (start symbol first) of a 4-token alphabet, against
    :func:`unilm_fairseq.modules.ngram_block.repeated_ngram_bans`, with and without exempt tokens."""
    generator = torch.Generator().manual_seed(0)
    exemptions_mattered = 0
    for trial in range(400):
        prefix = torch.randint(0, 4, (1, 1 + trial % 13), generator=generator)
        size, exempt = 1 + trial % 4, [t for t in range(4) if torch.rand(1, generator=generator) < 0.3]
        bans = []
        for tokens in (exempt, []):
            following, banned = repeated_ngram_bans(
                prefix, prefix.size(1) - 1, size, torch.tensor(tokens) if tokens else None
            )
            expected = set(following[0][banned[0]].tolist())
            assert standalone.banned_tokens(prefix[0].tolist(), size, set(tokens)) == expected, (prefix, size)
            bans.append(expected)
        exemptions_mattered += bans[0] != bans[1]
    assert exemptions_mattered > 20


def test_sources_are_laid_out_as_the_hub_does(built):
    parts = built("causal")
    hub, tokenizer = parts["hub"], parts["standalone"][1]
    truncated = 0
    for text in TEXTS:
        ids = hub.encode(text)
        expected = hub.task.build_dataset_for_inference([ids], [len(ids)])[0]["source"].tolist()
        assert standalone.encode_source(tokenizer, text, MAX_SOURCE) == expected
        truncated += len(ids) + 1 > MAX_SOURCE
    assert truncated == 1


def test_runs_without_the_project(built, tmp_path):
    """As a program, where neither unilm_fairseq nor fairseq imports: the hub's texts, one per line."""
    parts = built("pseudo_masked")
    script = tmp_path / "generate.py"
    shutil.copy(standalone.__file__, script)
    flags = [f"--{key.replace('_', '-')}={value}" for key, value in CLI_OPTIONS.items()]
    flags += ["--no-repeat-ngram-exempt", *CLI_EXEMPT]
    env = {"PATH": os.environ.get("PATH", ""), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.update(OMP_NUM_THREADS="1", HOME=str(tmp_path))
    # written as Windows editors write it: a byte-order mark and \r\n line ends
    sources = "\ufeff" + "".join(text + "\r\n" for text in TEXTS[2:])
    (tmp_path / "sources.txt").write_bytes(sources.encode("utf-8"))
    flags += ["--input", "sources.txt"]  # after the texts given as arguments
    command = [sys.executable, "-I", "-c", BLOCKER, str(script), parts["model_dir"], *TEXTS[:2], *flags]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = parts["hub"].generate(TEXTS, **{**SEARCH, **CLI_OPTIONS, "no_repeat_ngram_exempt": CLI_EXEMPT})
    assert done.stdout.splitlines() == expected
    assert len(set(expected)) > 1
    # and the blocker does block the project
    probe = tmp_path / "probe.py"
    probe.write_text("import unilm_fairseq\n")
    probe_command = [sys.executable, "-I", "-c", BLOCKER, str(probe)]
    refused = subprocess.run(probe_command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "blocked: unilm_fairseq" in refused.stderr


def test_refuses_what_it_cannot_decode(built, tmp_path):
    exported = built("masked")["model_dir"]
    for name in ("config.json", standalone.GENERATION_FILE):
        shutil.copy(os.path.join(exported, name), tmp_path / name)
    settings = json.loads((tmp_path / standalone.GENERATION_FILE).read_text())
    assert standalone.read_settings(str(tmp_path))["method"] == "masked"
    del settings["max_source_positions"]
    (tmp_path / standalone.GENERATION_FILE).write_text(json.dumps(settings))
    with pytest.raises(ValueError, match="missing max_source_positions"):
        standalone.read_settings(str(tmp_path))
    (tmp_path / standalone.GENERATION_FILE).unlink()
    with pytest.raises(ValueError, match="generation.json not found"):
        standalone.read_settings(str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(dict(config, model_type="unilm", rel_pos_bins=32)))
    with pytest.raises(ValueError, match="relative position bias"):
        standalone.read_settings(str(tmp_path))
    _, tokenizer, settings = built("masked")["standalone"]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        standalone.generate(None, tokenizer, TEXTS, dict(settings, no_repeat_ngram_exempt=["<nope>"]))
