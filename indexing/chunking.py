"""Items -> chunks: the item's text split by ``semantic-text-splitter`` with overlap.

Chunk sizes are counted in the offline model's own word pieces (its ``tokenizer.json``,
through the HF ``tokenizers`` library): at most ``max_tokens`` (200) per chunk, well below
the model's 256, leaving room for the title that heads every chunk after the first (so a
chunk of review text still says which product it is about) and the two special tokens.
Neighbouring chunks share up to ``overlap`` (32) tokens, so a sentence cut at a boundary
is whole in one of them. The splitter prefers paragraph, then sentence, then word breaks.

Without the ``embeddings-local`` extra (an OpenAI-only deployment) the same splitter
counts characters instead (4 per token, OpenAI's rule of thumb): OpenAI's models accept
8k tokens, so the bound is for retrieval granularity, not a hard limit.

Chunk ids are deterministic: ``<item doc id>:<position>`` (hashed like item ids when that
is longer than Elasticsearch's 512-byte limit).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from semantic_text_splitter import TextSplitter

from core.store import doc_id_for
from indexing.embedders import EmbedderUnavailable, load_tokenizer
from indexing.text import item_title, render_item

logger = logging.getLogger(__name__)

CHUNK_TOKENS = 200
OVERLAP_TOKENS = 32
CHARS_PER_TOKEN = 4
# A long title heading later chunks is cut: it is context, not content.
HEADER_CHARS = 120


@dataclass(frozen=True)
class Chunk:
    """One piece of an item's text with the metadata search and replacement need."""

    chunk_id: str
    item_key: str
    item_id: str  # the item's document id in items-<site>
    site: str
    item_type: str
    url: str | None
    job_id: str | None
    position: int  # 0-based, in text order
    n_chunks: int  # how many chunks the item has (replacement deletes positions >= this)
    title: str
    text: str


def chunk_id(item_key: str, position: int) -> str:
    return doc_id_for(f"{doc_id_for(item_key)}:{position}")


class Chunker:
    """Splits item documents into ``Chunk``s; one instance is reusable and thread-safe."""

    def __init__(
        self,
        *,
        max_tokens: int = CHUNK_TOKENS,
        overlap: int = OVERLAP_TOKENS,
        use_model_tokenizer: bool = True,
    ) -> None:
        if not 0 <= overlap < max_tokens:
            raise ValueError("overlap must be smaller than max_tokens")
        tokenizer = None
        if use_model_tokenizer:
            try:
                tokenizer = load_tokenizer()
            except EmbedderUnavailable as exc:
                logger.warning("chunk sizes counted in characters: %s", exc)
        if tokenizer is not None:
            self._splitter = TextSplitter.from_huggingface_tokenizer(
                tokenizer, capacity=max_tokens, overlap=overlap
            )
            self.signature = f"minilm-wordpiece:{max_tokens}/{overlap}"
        else:
            self._splitter = TextSplitter(
                capacity=max_tokens * CHARS_PER_TOKEN, overlap=overlap * CHARS_PER_TOKEN
            )
            self.signature = f"chars:{max_tokens * CHARS_PER_TOKEN}/{overlap * CHARS_PER_TOKEN}"

    def split(self, text: str) -> list[str]:
        return [piece for piece in self._splitter.chunks(text) if piece.strip()]

    def chunk_item(self, doc: Mapping[str, Any]) -> list[Chunk]:
        """The chunks of one stored item document (fields + item_key, site, item_type...)."""
        item_key = str(doc["item_key"])
        title = item_title(doc)
        header = title[:HEADER_CHARS]
        pieces = self.split(render_item(doc)) or [title]
        url = doc.get("url")
        job_id = doc.get("job_id")
        chunks = []
        for position, piece in enumerate(pieces):
            text = piece if position == 0 or piece.startswith(header) else f"{header}\n{piece}"
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(item_key, position),
                    item_key=item_key,
                    item_id=doc_id_for(item_key),
                    site=str(doc.get("site", "")),
                    item_type=str(doc.get("item_type", "")),
                    url=str(url) if url else None,
                    job_id=str(job_id) if job_id else None,
                    position=position,
                    n_chunks=len(pieces),
                    title=title,
                    text=text,
                )
            )
        return chunks
