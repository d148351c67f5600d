"""UniLMModel.from_pretrained: the same hypotheses as fairseq-generate and fairseq-interactive, features.

One tiny model learns a copy task over sources of 4 to 6 words (whitespace words, ``--bpe wordpiece``
with a vocab.txt of those words, so raw text is lowercased on the way in).
"""

import argparse
import json
import os
import random
import re
import shutil

import pytest
import torch
from fairseq.data.encoders import build_bpe

from unilm_fairseq import UniLMHubInterface, UniLMModel
from unilm_fairseq.encoders.wordpiece import SPECIAL_TOKENS
from unilm_fairseq.hub.base import _local_bpe_files
from unilm_fairseq.models.unilmv2 import UniLMv2Model

from ..helpers.cli import REPO, load_script, preprocess, run_cli

pytestmark = pytest.mark.slow

WORDS = [f"w{i}" for i in range(16)]
MIN_WORDS, MAX_WORDS = 4, 6  # copy lengths the tiny model learns in a few hundred updates
# raw inputs: mixed case (WordPiece lowercases them), 4 to 6 words, batched together
RAW_INPUTS = [
    "W1 w2 W3 w4 w5",
    "w9 w9 w0 w15",
    "w3 W14 w7 w7 w2 w11",
    "w0 w1 w2 w3",
    "W12 w13 w5 w6 w8",
    "w4 w4 w10 w11 w12 w15",
    "w6 w5 w4 w3",
    "w8 w15 w1 W1 w0",
]
BATCH = 16  # every input in one batch for each tool
DEFAULT_OPTIONS = {"beam": 4}
# options that change the outputs: ban repeated bigrams, force longer outputs, favour short ones
CHANGED_OPTIONS = {"beam": 3, "lenpen": 0.5, "no_repeat_ngram_size": 2, "min_len": 6, "max_len_b": 8}


def write_pairs(path, lines):
    for side in ("src", "tgt"):
        (path.parent / f"{path.name}.{side}").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("hub")
    rng = random.Random(0)
    for split, n in (("train", 2000), ("valid", 20)):
        write_pairs(
            work / split,
            [" ".join(rng.choices(WORDS, k=rng.randint(MIN_WORDS, MAX_WORDS))) for _ in range(n)],
        )
    vocab = work / "ckpt" / "vocab.txt"  # found by from_pretrained(bpe="wordpiece") in the model folder
    vocab.parent.mkdir()
    vocab.write_text("\n".join([*SPECIAL_TOKENS, *WORDS]) + "\n")
    bpe = build_bpe(argparse.Namespace(bpe="wordpiece", wordpiece_vocab=str(vocab)))
    write_pairs(work / "test", [bpe.encode(line) for line in RAW_INPUTS])
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
                "--trainpref", str(work / "train"), "--validpref", str(work / "valid"), "--testpref",
                str(work / "test"), "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    run_cli(["fairseq-train", str(work / "bin"), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
             "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq", "--max-source-positions", "16",
             "--max-target-positions", "16", "--batch-size", "32", "--optimizer", "adam", "--lr", "3e-3",
             "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "30", "--max-update", "300",
             "--dropout", "0", "--attention-dropout", "0", "--cpu", "--num-workers", "0", "--seed", "1",
             "--save-dir", str(work / "ckpt"), "--no-epoch-checkpoints", "--disable-validation"])  # fmt: skip
    return work


@pytest.fixture(scope="module")
def unilm(trained):
    return UniLMModel.from_pretrained(
        str(trained / "ckpt"), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(trained / "bin"),
        bpe="wordpiece",
    ).eval()  # fmt: skip


def cli_options(options):
    flags = []
    for key, value in options.items():
        flags += [f"--{key.replace('_', '-')}", str(value)]
    return flags


def parse_detokenized(stdout):
    """``D-<id>`` lines of fairseq-generate/-interactive -> texts in id order."""
    found = {int(i): text for i, text in re.findall(r"^D-(\d+)\t\S+\t(.*)$", stdout, re.M)}
    return [found[i] for i in range(len(found))]


def fairseq_generate(trained, options):
    ckpt = trained / "ckpt"
    out = run_cli(["fairseq-generate", str(trained / "bin"), "--user-dir", "unilm_fairseq", "--task",
                   "unilm_seq2seq", "--path", str(ckpt / "checkpoint_last.pt"), "--gen-subset", "test",
                   "--bpe", "wordpiece", "--wordpiece-vocab", str(ckpt / "vocab.txt"),
                   "--batch-size", str(BATCH), "--required-batch-size-multiple", "1", "--cpu",
                   *cli_options(options)])  # fmt: skip
    return parse_detokenized(out.stdout)


def fairseq_interactive(trained, options):
    ckpt = trained / "ckpt"
    out = run_cli(["fairseq-interactive", str(trained / "bin"), "--user-dir", "unilm_fairseq", "--task",
                   "unilm_seq2seq", "--path", str(ckpt / "checkpoint_last.pt"), "--bpe", "wordpiece",
                   "--wordpiece-vocab", str(ckpt / "vocab.txt"), "--buffer-size", str(BATCH),
                   "--batch-size", str(BATCH), "--cpu", *cli_options(options)],
                  input_text="\n".join(RAW_INPUTS) + "\n")  # fmt: skip
    return parse_detokenized(out.stdout)


def test_generate_matches_fairseq_generate_and_interactive(trained, unilm):
    ours = unilm.generate(RAW_INPUTS, batch_size=BATCH, **DEFAULT_OPTIONS)
    assert ours == fairseq_generate(trained, DEFAULT_OPTIONS)
    assert ours == fairseq_interactive(trained, DEFAULT_OPTIONS)
    # the task was learned: the inputs come back lowercased
    assert sum(hyp == src.lower() for hyp, src in zip(ours, RAW_INPUTS)) >= len(RAW_INPUTS) - 1, ours


def test_generation_options_match_fairseq_interactive(trained, unilm):
    ours = unilm.generate(RAW_INPUTS, batch_size=BATCH, **CHANGED_OPTIONS)
    assert ours == fairseq_interactive(trained, CHANGED_OPTIONS)
    for hyp in ours:
        words = hyp.split()
        bigrams = list(zip(words, words[1:]))
        assert len(set(bigrams)) == len(bigrams)  # no_repeat_ngram_size=2
        assert len(words) >= CHANGED_OPTIONS["min_len"]
    assert ours != unilm.generate(RAW_INPUTS, batch_size=BATCH, **DEFAULT_OPTIONS)


def test_batching_and_input_forms(unilm):
    batched = unilm.generate(RAW_INPUTS, beam=4, batch_size=BATCH)
    assert unilm.generate(RAW_INPUTS, beam=4, batch_size=3) == batched
    assert unilm.generate(RAW_INPUTS[2], beam=4) == batched[2]
    nbest = unilm.generate(RAW_INPUTS[:2], beam=4, nbest=3)
    assert [len(n) for n in nbest] == [3, 3] and [n[0] for n in nbest] == batched[:2]
    hypos = unilm.generate([unilm.encode(s) for s in RAW_INPUTS[:2]], beam=4)
    assert [unilm.decode(h[0]["tokens"]) for h in hypos] == batched[:2]
    assert unilm.sample(RAW_INPUTS[:2], beam=4) == batched[:2]  # fairseq's own hub entry point
    with pytest.raises(TypeError, match="unknown generation option"):
        unilm.generate(RAW_INPUTS, beem=4)


def test_encode_decode_round_trip(unilm):
    tokens = unilm.encode("W1 w2 W15 w15")
    d = unilm.src_dict
    assert tokens.tolist() == [d.index(w) for w in ("w1", "w2", "w15", "w15")] + [d.eos()]
    assert unilm.decode(tokens) == "w1 w2 w15 w15"


def test_extract_features_equal_a_direct_forward(unilm):
    tokens = [unilm.encode(s) for s in RAW_INPUTS[:3]]
    features = unilm.extract_features(tokens)
    longest = max(len(t) for t in tokens)
    assert features.shape == (3, longest + 1, unilm.model.cfg.encoder_embed_dim)
    d = unilm.src_dict
    for row, t in zip(features, tokens):
        source = torch.cat([torch.tensor([d.bos()]), t])[None]  # 1 x S: "[SOS] words [EOS]"
        n = source.size(1)
        direct, _ = unilm.model(
            source, torch.zeros_like(source), torch.arange(n)[None], torch.ones(1, n, n, dtype=torch.bool),
            features_only=True,
        )  # fmt: skip
        torch.testing.assert_close(row[:n], direct[0], atol=1e-5, rtol=1e-5)
        assert not row[n:].any()  # padding
    assert unilm.extract_features(RAW_INPUTS[0]).shape == (1, len(tokens[0]) + 1, features.size(-1))


def test_encoder_files_are_local(tmp_path):
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    (tmp_path / "encoder.json").write_text("{}")
    assert _local_bpe_files(str(tmp_path), {"bpe": "gpt2"}) == {
        "gpt2_encoder_json": str(tmp_path / "encoder.json"),
        "gpt2_vocab_bpe": str(tmp_path / "merges.txt"),
    }
    assert (
        _local_bpe_files(str(tmp_path), {"bpe": "gpt2", "gpt2_encoder_json": "e.json", "gpt2_vocab_bpe": "v"})
        == {}
    )
    with pytest.raises(FileNotFoundError, match="wordpiece_vocab"):
        _local_bpe_files(str(tmp_path), {"bpe": "wordpiece"})
    with pytest.raises(ValueError, match="nothing is downloaded"):
        _local_bpe_files(
            str(tmp_path), {"bpe": "sentencepiece", "sentencepiece_model": "https://x/spm.model"}
        )
    assert _local_bpe_files(str(tmp_path), {}) == {}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_generate_on_gpu(unilm):
    on_cpu = unilm.generate(RAW_INPUTS, beam=4, batch_size=BATCH)
    try:
        assert unilm.cuda().generate(RAW_INPUTS, beam=4, batch_size=BATCH) == on_cpu
        assert unilm.extract_features(RAW_INPUTS[:2]).device.type == "cuda"
    finally:
        unilm.cpu()


def test_the_model_class_loads_the_same_interface(trained, unilm):
    """``UniLMv2Model.from_pretrained`` returns the hub interface, as fairseq's returns its
    ``GeneratorHubInterface``; ``UniLMModel`` is the interface's other name."""
    assert UniLMModel is UniLMHubInterface
    hub = UniLMv2Model.from_pretrained(
        str(trained / "ckpt"), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(trained / "bin"),
        bpe="wordpiece",
    ).eval()  # fmt: skip
    assert type(hub) is UniLMHubInterface
    inputs = RAW_INPUTS[:3]
    assert hub.generate(inputs, **DEFAULT_OPTIONS) == unilm.generate(inputs, **DEFAULT_OPTIONS)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_len_b": 0}, "--min-len 1 is above the longest output allowed"),
        ({"max_len_b": 2, "min_len": 3}, "--min-len 3 is above the longest output allowed"),
        ({"nbest": 6, "beam": 5}, "--nbest 6 needs 1 <= nbest <= --beam (5)"),
    ],
)
def test_impossible_generation_options_are_refused_before_decoding(trained, unilm, options, message):
    """fairseq-generate once asserted deep in the search (min_len > max_len) or quietly returned beam
    hypotheses for a larger --nbest; the Python API and the command line now refuse both alike."""
    ckpt = trained / "ckpt"
    proc = run_cli(["fairseq-generate", str(trained / "bin"), "--user-dir", "unilm_fairseq", "--task",
                    "unilm_seq2seq", "--path", str(ckpt / "checkpoint_last.pt"), "--gen-subset", "test",
                    "--batch-size", str(BATCH), "--cpu", *cli_options(options)], check=False)  # fmt: skip
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr[-2000:]
    assert "AssertionError" not in proc.stderr and not re.search(r"^H-\d+", proc.stdout, re.M)
    if "nbest" not in options:  # the API's own nbest check words it its own way
        with pytest.raises(ValueError, match=re.escape(message)):
            unilm.generate(RAW_INPUTS[:1], **options)


def test_min_len_beyond_a_source_dependent_limit_is_refused(unilm):
    """--max-len-a: the limit depends on each source; the batch is refused before its search starts."""
    with pytest.raises(ValueError, match=r"--min-len 30 cannot be met: sources of \d+ tokens allow at most"):
        unilm.generate(RAW_INPUTS[:1], min_len=30, max_len_a=1, max_len_b=0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m.score(["w1 w2"], ["w1", "w2"]), "takes as many targets as sources"),
        (lambda m: m.score("w1 w2", " ".join(["w1"] * 40)), "longer than max_target_positions=16"),
        (lambda m: m.generate(RAW_INPUTS[:1], beam=0), "needs 1 <= nbest <= beam"),
    ],
)
def test_api_bad_requests_are_value_errors(unilm, call, message):
    with pytest.raises(ValueError, match=message):
        call(unilm)


def test_api_empty_requests_give_empty_answers(unilm):
    assert unilm.generate([]) == [] and unilm.score([], []) == []


def test_a_program_using_the_api_prints_its_results_only(trained):
    """A script that loads and generates, with no logging set-up of its own, prints nothing else: fairseq
    0.12's import configures the root logger at DEBUG, which the plugin undoes (import_logging.py)."""
    program = (
        "from unilm_fairseq import UniLMModel\n"
        f"model = UniLMModel.from_pretrained({str(trained / 'ckpt')!r}, "
        f"checkpoint_file='checkpoint_last.pt', data_name_or_path={str(trained / 'bin')!r}, "
        "bpe='wordpiece')\n"
        f"for line in model.generate({RAW_INPUTS[:2]!r}):\n"
        "    print(line)\n"
    )
    proc = run_cli(["python", "-c", program])
    assert len(proc.stdout.splitlines()) == 2
    assert proc.stderr == ""


def model_folder(trained, tmp_path, beam, min_len, max_len_b):
    """A model folder of the trained checkpoint (scripts/write_model_folder.py), lenpen 1.0, no blocking."""
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copyfile(trained / "ckpt" / "checkpoint_last.pt", folder / "checkpoint_last.pt")
    run_cli(["python", os.path.join(REPO, "scripts", "write_model_folder.py"), str(folder), "--dicts",
             str(trained / "bin"), "--checkpoint", "checkpoint_last.pt", "--bpe", "wordpiece", "--bpe-file",
             str(trained / "ckpt" / "vocab.txt"), "--beam", str(beam), "--lenpen", "1.0", "--min-len",
             str(min_len), "--max-len-b", str(max_len_b), "--no-repeat-ngram-size", "0"])  # fmt: skip
    return folder


def test_generate_text_script_on_a_model_folder(trained, unilm, tmp_path):
    """scripts/generate_text.py: the API's outputs for a file of sources read from standard input, a line per
    input line (a blank line gets an empty one), generation.json's settings unless an option overrides one,
    from an input written as Windows editors write it (a byte-order mark, \\r\\n line ends)."""
    folder = model_folder(trained, tmp_path, beam=4, min_len=1, max_len_b=16)
    sources = RAW_INPUTS[:4]
    stdin = "\ufeff" + sources[0] + "\r\n\r\n" + "\r\n".join(sources[1:]) + "\r\n"
    script = os.path.join(REPO, "scripts", "generate_text.py")
    proc = run_cli(["python", script, str(folder), "--input", "-", "--beam", "2", "--batch-size", "2",
                    "--chunk-lines", "3", "--cpu"], input_text=stdin)  # fmt: skip
    expected = unilm.generate(sources, beam=2)
    assert len(set(expected)) == 4
    assert proc.stdout.split("\n") == [expected[0], "", *expected[1:], ""]
    assert "1 blank input lines" in proc.stderr and "generated 3 of 4 sources" in proc.stderr

    bad = run_cli(["python", script, str(tmp_path / "nowhere"), "a text"], check=False)
    assert bad.returncode == 1 and "error: model directory not found" in bad.stderr
    assert "Traceback" not in bad.stderr
    cut = folder / "checkpoint_last.pt"  # a checkpoint cut short (a copy interrupted): one error line
    cut.write_bytes(cut.read_bytes()[:1000])
    bad = run_cli(["python", script, str(folder), "a text"], check=False)
    assert (
        bad.returncode == 1 and "cannot load its checkpoint" in bad.stderr and "Traceback" not in bad.stderr
    )
    # an output the script could not write is refused before the model loads, not after the decoding
    out = str(tmp_path / "no" / "out.txt")
    unwritable = run_cli(["python", script, str(folder), "a text", "--output", out], check=False)
    assert (
        unwritable.returncode == 2
        and "--output" in unwritable.stderr
        and "folder does not exist" in unwritable.stderr
    )


def test_a_folder_records_the_casing_of_its_training_text(trained, tmp_path):
    """generation.json's "lowercase" (write_model_folder.py --lowercase / --cased) sets the hub's casing: for
    WordPiece over the vocabulary's own guess, and without WordPiece by lowercasing the text itself."""
    folder = model_folder(trained, tmp_path, beam=2, min_len=1, max_len_b=8)
    settings = json.loads((folder / "generation.json").read_text())
    assert "lowercase" not in settings  # by default the vocabulary decides: uncased here
    upper, lower = "W1 W3 W5", "w1 w3 w5"
    assert (
        UniLMModel.from_pretrained(str(folder)).encode(upper).tolist()
        == UniLMModel.from_pretrained(str(folder)).encode(lower).tolist()
    )
    for bpe, lowercase in (("wordpiece", False), (None, True), (None, False)):
        written = {**settings, "bpe": bpe, "lowercase": lowercase}
        (folder / "generation.json").write_text(
            json.dumps({k: v for k, v in written.items() if v is not None})
        )
        hub = UniLMModel.from_pretrained(str(folder))
        same = hub.encode(upper).tolist() == hub.encode(lower).tolist()
        assert same == lowercase and hub.src_dict.unk() not in hub.encode(lower).tolist(), (bpe, lowercase)
    (folder / "generation.json").write_text(json.dumps({**settings, "lowercase": "yes"}))
    with pytest.raises(ValueError, match='lowercase is "yes", not true or false'):
        UniLMModel.from_pretrained(str(folder))


def test_the_palm_interface_refuses_another_task_s_folder(trained, tmp_path):
    """PALMHubInterface on an s2s-ft folder is an error naming both tasks, not an interface whose score and
    extract_features fail later."""
    from unilm_fairseq.hub.palm import PALMHubInterface

    folder = model_folder(trained, tmp_path, beam=2, min_len=1, max_len_b=8)
    with pytest.raises(ValueError, match="holds a --task unilm_seq2seq model, not palm_seq2seq"):
        PALMHubInterface.from_pretrained(str(folder))


def test_tune_decoding_keeps_the_best_setting_on_the_validation_pairs(trained, unilm, tmp_path):
    """scripts/tune_decoding.py: each setting's scores are those of the API's outputs with that setting; the
    best by ROUGE-L goes into generation.json (the other settings kept), the whole search beside it."""
    from unilm_fairseq.scoring.metrics import rouge_scores

    folder = model_folder(trained, tmp_path, beam=3, min_len=9, max_len_b=12)
    before = json.loads((folder / "generation.json").read_text())
    sources = RAW_INPUTS[:6]
    refs = [line.lower() for line in sources]  # the model copies its input
    (tmp_path / "valid.src").write_text("\n".join(sources) + "\n")
    (tmp_path / "valid.tgt").write_text("\n".join(refs) + "\n")
    script = os.path.join(REPO, "scripts", "tune_decoding.py")
    proc = run_cli(["python", script, str(folder), "--source", str(tmp_path / "valid.src"), "--reference",
                    str(tmp_path / "valid.tgt"), "--min-len", "9,1", "--lenpen", "1.0", "--write",
                    "--shell-out", str(tmp_path / "best.env"), "--cpu"])  # fmt: skip
    search = json.loads((folder / "decoding_search.json").read_text())
    assert [row["setting"]["min_len"] for row in search["rows"]] == [1, 9] and search["pairs"] == 6
    for row in search["rows"]:
        hyps = unilm.generate(sources, beam=3, lenpen=1.0, min_len=row["setting"]["min_len"], max_len_b=12)
        assert row["rougeL"] == pytest.approx(100 * rouge_scores(hyps, refs)["rougeL"], abs=1e-9)
    scores = {row["setting"]["min_len"]: row["rougeL"] for row in search["rows"]}
    assert scores[1] > scores[9]  # 9 tokens at least: longer than every copy
    # p: min_len 1's lead over the folder's (9) in 1000 paired resamples of the 6 pairs; the folder's own 1.0
    p = {row["setting"]["min_len"]: row["p"] for row in search["rows"]}
    assert p[9] == 1.0 and 0.0 <= p[1] < 0.5 and search["bootstrap"] == 1000 and search["max_p"] == 1.0
    assert re.search(r"^1 .* 0\.\d{3} <- best$", proc.stdout, re.M) and "  - (the folder's)" in proc.stdout
    after = json.loads((folder / "generation.json").read_text())
    assert after == {**before, "min_len": 1} and search["before"]["min_len"] == 9
    assert "best: beam 3, lenpen 1.0, min_len 1, max_len_b 12" in proc.stdout
    assert (tmp_path / "best.env").read_text().splitlines() == [
        "BEAM=3", "LENPEN=1.0", "MIN_LEN=1", "MAX_LEN_B=12", "NO_REPEAT_NGRAM_SIZE=0"
    ]  # fmt: skip
    # the folder's own setting wins a tie: the same setting twice over the folder's lenpen
    tie = run_cli(["python", script, str(folder), "--source", str(tmp_path / "valid.src"), "--reference",
                   str(tmp_path / "valid.tgt"), "--lenpen", "1.0", "--limit", "2", "--cpu"])  # fmt: skip
    assert "2 validation pairs" in tie.stdout and "<- best (the folder's)" in tie.stdout

    (tmp_path / "short.tgt").write_text(refs[0] + "\n")
    bad = run_cli(["python", script, str(folder), "--source", str(tmp_path / "valid.src"), "--reference",
                   str(tmp_path / "short.tgt")], check=False)  # fmt: skip
    assert bad.returncode == 1 and "has 6 lines but" in bad.stderr and "Traceback" not in bad.stderr
    nowhere = run_cli(["python", script, str(folder), "--source", str(tmp_path / "valid.src"), "--reference",
                       str(tmp_path / "valid.tgt"), "--shell-out", str(tmp_path / "no" / "best.env")],
                      check=False)  # fmt: skip
    assert (
        nowhere.returncode == 2
        and "--shell-out" in nowhere.stderr
        and "folder does not exist" in nowhere.stderr
    )

    # settings chosen on another checkpoint of the folder go into generation.json with that checkpoint
    shutil.copy(folder / "checkpoint_last.pt", folder / "checkpoint_other.pt")
    run_cli(["python", script, str(folder), "--source", str(tmp_path / "valid.src"), "--reference",
             str(tmp_path / "valid.tgt"), "--lenpen", "1.0", "--limit", "2", "--write", "--checkpoint-file",
             "checkpoint_other.pt", "--cpu"])  # fmt: skip
    assert json.loads((folder / "generation.json").read_text())["checkpoint"] == "checkpoint_other.pt"
    assert json.loads((folder / "decoding_search.json").read_text())["checkpoint"] == "checkpoint_other.pt"


@pytest.mark.parametrize("style", ["fairseq", "gnmt"])
def test_one_search_ranked_by_each_length_penalty_is_that_penalty_s_search(unilm, style):
    """tune_decoding.py decodes once per group of settings that differ only in lenpen and ranks the finished
    hypotheses by each penalty: the outputs of decoding with that penalty, for both penalty forms."""
    tune_decoding = load_script("scripts/tune_decoding.py")
    settings = {"beam": 4, "min_len": 1, "max_len_b": 12, "lenpen_style": style}
    # shorter than any training copy: the finished hypotheses differ in length, so the penalty decides
    inputs = [*RAW_INPUTS, "w1 w2", "w7 W3", "w11"]
    ids = [unilm.encode(text) for text in inputs]
    searched = unilm.generate(ids, nbest=4, lenpen=1.0, **settings)
    outputs = {}
    for lenpen in (0.0, 0.5, 1.0, 2.0, 6.0):
        ranked = tune_decoding.best_by_lenpen(searched, lenpen, style)
        outputs[lenpen] = [unilm.decode(h["tokens"]) for h in ranked]
        assert outputs[lenpen] == unilm.generate(inputs, lenpen=lenpen, **settings), lenpen
    assert len({tuple(texts) for texts in outputs.values()}) > 1  # the penalties choose differently here
