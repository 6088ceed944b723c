"""Entity precision and recall of the offline extractor against hand labels of LoCoMo dev turns.

    python -m bench.entities_eval                 # both strata, per category and overall
    python -m bench.entities_eval --errors        # also list every miss and false alarm

The labels (bench/entities_labels.json) say how the turns were sampled and what counts as an
entity. A predicted entity matches a gold one when category and slug agree (`typed`); `untyped`
counts a slug found under any category. Extraction runs on the turn text, as labelled.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

from service.enrichment.extractor import CATEGORIES, MAX_TEXT, extract_entities, slugify
from service.enrichment.gazetteer import load_gazetteer

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "bench" / "entities_labels.json"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"


def turn_texts(data: list[dict]) -> dict[str, str]:
    """'<sample_id>|<dia_id>' -> the turn text as bench.locomo stores it (photo caption appended)."""
    out = {}
    for sample in data:
        conv = sample["conversation"]
        for key in conv:
            if re.fullmatch(r"session_\d+", key):
                for turn in conv[key]:
                    text = turn["text"]
                    if turn.get("blip_caption"):
                        text = f"{text} [shares a photo: {turn['blip_caption']}]"
                    out[f"{sample['sample_id']}|{turn['dia_id']}"] = text
    return out


def pairs(entities: dict[str, list[str]]) -> set[tuple[str, str]]:
    return {(c, slugify(n)) for c, names in entities.items() for n in names if slugify(n)}


def score(rows: list[tuple[set, set]]) -> dict:
    """Per category and overall: gold, predicted, true positives, precision, recall, F1."""
    table: dict[str, dict] = {}
    for category in (*CATEGORIES, "overall", "untyped"):
        tp = fp = fn = 0
        for gold, pred in rows:
            if category == "untyped":
                g, p = {s for _, s in gold}, {s for _, s in pred}
            elif category == "overall":
                g, p = gold, pred
            else:
                g, p = {x for x in gold if x[0] == category}, {x for x in pred if x[0] == category}
            tp, fp, fn = tp + len(g & p), fp + len(p - g), fn + len(g - p)
        precision = tp / (tp + fp) if tp + fp else None
        recall = tp / (tp + fn) if tp + fn else None
        f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
        table[category] = {"gold": tp + fn, "predicted": tp + fp, "tp": tp, "precision": precision, "recall": recall, "f1": f1}
    return table


def fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


# Texts a client may store to make extraction slow: each cue the rules look ahead or back from,
# repeated to the extractor's limit (MAX_TEXT), and random runs of them. "New " * 5000 took 190 s when
# a lookup over a span's prefixes was not bounded.
HOSTILE_CUES = (
    "The", "New", "New York", "Visited", "Sarah", "St.", "Dr.", "A", "Hey", "Herr", "Stanford", "South",
    "Deadline for", "Mein", "Der Hund", "a dog named", "hat", "Jonas hat", "Email", "Los Angeles", "of", "Bank of",
)


def hostile_texts(seed: int = 7, mixes: int = 20) -> dict[str, str]:
    rng = random.Random(seed)
    out = {f"{cue!r} repeated": (" ".join([cue] * (MAX_TEXT // (len(cue) + 1) + 1)))[:MAX_TEXT] for cue in HOSTILE_CUES}
    for k in range(mixes):
        words: list[str] = []
        while sum(map(len, words)) + len(words) < MAX_TEXT:
            words.append(rng.choice(HOSTILE_CUES))
        out[f"random mix {k}"] = " ".join(words)[:MAX_TEXT]
    return out


def slowest(gaz) -> tuple[float, str]:
    """(seconds, kind) of the slowest hostile text."""
    worst = (0.0, "")
    for kind, text in hostile_texts().items():
        t0 = time.perf_counter()
        extract_entities(text, gaz)
        worst = max(worst, (time.perf_counter() - t0, kind))
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.entities_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--errors", action="store_true", help="list misses and false alarms")
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    args = parser.parse_args(argv)
    labels = json.loads(args.labels.read_text())
    texts = turn_texts(json.loads(args.data.read_text()))
    started = time.perf_counter()
    gaz = load_gazetteer()
    load_s = time.perf_counter() - started
    result: dict = {"gazetteer_load_s": load_s, "strata": {}}
    rows_all = []
    errors = Counter()
    elapsed = 0.0
    n_turns = 0
    for name, stratum in labels["strata"].items():
        rows = []
        for item in stratum["turns"]:
            text = texts[item["turn"]]
            t0 = time.perf_counter()
            predicted = extract_entities(text, gaz)
            elapsed += time.perf_counter() - t0
            n_turns += 1
            gold, pred = pairs(item["entities"]), pairs(predicted)
            rows.append((gold, pred))
            for c, s in gold - pred:
                errors[f"miss        {c}:{s}  ({item['turn']})"] += 1
            for c, s in pred - gold:
                errors[f"false alarm {c}:{s}  ({item['turn']})"] += 1
        rows_all += rows
        result["strata"][name] = {"turns": len(rows), "scores": score(rows)}
    result["strata"]["A+B"] = {"turns": len(rows_all), "scores": score(rows_all)}
    result["turns_per_s"] = n_turns / elapsed if elapsed else None
    for name, stratum in result["strata"].items():
        print(f"\nstratum {name} ({stratum['turns']} turns)\n")
        print("| category | gold | predicted | precision | recall | F1 |\n|---|---|---|---|---|---|")
        for category, row in stratum["scores"].items():
            print(f"| {category} | {row['gold']} | {row['predicted']} | {fmt(row['precision'])} | {fmt(row['recall'])} | {fmt(row['f1'])} |")
    print(f"\nextraction: {result['turns_per_s']:.0f} turns/s on one core; lists loaded in {load_s:.2f} s")
    worst_s, worst_kind = slowest(gaz)
    result["hostile_slowest_s"] = worst_s
    print(f"hostile texts ({len(hostile_texts())} of {MAX_TEXT:,} characters, see HOSTILE_CUES): the slowest took "
          f"{worst_s * 1000:.0f} ms ({worst_kind})")
    if args.errors:
        print("\nerrors:")
        for line in sorted(errors):
            print(" ", line)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
