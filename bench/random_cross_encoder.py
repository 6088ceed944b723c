"""Build an untrained cross-encoder of a real model's shape, to measure what RECALL_RERANK_MODEL costs.

No cross-encoder weights are reachable offline, so the reranking stage's quality cannot be measured
here; its cost can: a randomly initialised BERT of cross-encoder/ms-marco-MiniLM-L-6-v2's shape (6
layers, 384 wide, the uncased WordPiece vocabulary of the default embedding model) costs what the
trained one would. Its scores are noise: never use it for anything but timing.

    python -m bench.random_cross_encoder /tmp/ce-minilm-l6             # ms-marco-MiniLM-L-6-v2's shape
    python -m bench.random_cross_encoder /tmp/ce-l2 --layers 2 --hidden 128
    python -m bench.locomo --skip-ingest --set recall_rerank_model=/tmp/ce-minilm-l6
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def build(out: Path, *, layers: int, hidden: int, seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from service.config import default_embedding_model

    vocab = Path(default_embedding_model()) / "vocab.txt"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(vocab, out / "vocab.txt")
    tokenizer = BertTokenizerFast(vocab_file=str(out / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(out)
    torch.manual_seed(seed)
    heads = max(1, hidden // 32)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.random_cross_encoder", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the model to")
    parser.add_argument("--layers", type=int, default=6, help="transformer layers (default 6, as MiniLM-L-6)")
    parser.add_argument("--hidden", type=int, default=384, help="hidden size (default 384, as MiniLM-L-6)")
    args = parser.parse_args(argv)
    print(f"untrained cross-encoder ({args.layers} layers, {args.hidden} wide) written to {build(args.out, layers=args.layers, hidden=args.hidden)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
