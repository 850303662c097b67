"""The LLM extractor: per chunk, render → complete → parse → glean → quality filter.

:class:`LLMExtractor` implements the :class:`Extractor` protocol over any
:class:`kgsearch.llm.base.LLM`. Chunks are extracted on a small thread pool (LLM clients
are synchronous and the time is spent waiting on the server). Consecutive short chunks
can share one call (``pack_chars``): the model tags each item with its chunk number
and the results are split back per chunk before the quality filter.

A reply that cannot be used (nothing readable, too long, cut off; see
:func:`~kgsearch.extract.glean.glean`) gives that chunk a result with ``error`` set
and the raw reply in ``raw`` (escaped so any store keeps it). A call that fails (a
:class:`ProviderError`) fails the chunks of that call only, so one bad chunk never
fails its batch; only :class:`~kgsearch.http.ProviderSkipped` (the breaker is open:
nothing was attempted) propagates, so the runner stops without costing any chunk an
attempt.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from kgsearch.errors import ProviderError
from kgsearch.extract.glean import MAX_REPLY_CHARS, Gleaned, glean, storable
from kgsearch.extract.ontology import GraphSchema
from kgsearch.extract.parse import Parsed
from kgsearch.extract.prompts import (
    DomainPrompt,
    gleaning_message,
    output_schema,
    render,
    render_packed,
    with_schema,
)
from kgsearch.extract.quality import QualityRules, apply_quality, normalize_name, rules_digest
from kgsearch.extract.schema import (
    ChunkText,
    ExtractedGraph,
    ExtractionResult,
)
from kgsearch.http import ProviderSkipped
from kgsearch.llm.base import LLM, Message, Usage
from kgsearch.llm.meter import in_context

__all__ = [
    "FIRST_REPLY_RATIO",
    "GLEANING_REPLY_RATIO",
    "LLMExtractor",
    "estimate_tokens",
    "pack_chunks",
]

CHARS_PER_TOKEN = 4
FIRST_REPLY_RATIO = 0.6
"""Expected reply characters per chunk character for the first answer. Measured on the
recorded gpt-4o GraphRAG extractions of *A Christmas Carol* (0.48 in tuple format;
JSON is about a quarter longer)."""
GLEANING_REPLY_RATIO = 0.5
"""The same for each gleaning round (0.53 measured for gpt-4o, 0.40 for gpt-3.5)."""
MIN_REPLY_TOKENS = 64


class LLMExtractor:
    """Extract entities and relationships from chunks with a chat model.

    Args:
        llm: The chat model (possibly a caching wrapper).
        prompt: The domain prompt (:func:`kgsearch.extract.prompts.load_prompt`).
        rules: The quality filter applied to every chunk's result.
        gleanings: "Anything missed?" rounds after the first answer.
        max_relationships: Cap per chunk (overrides ``rules.max_relationships``).
        pack_chars: Pack consecutive chunks shorter than this into one call of at
            most this many characters (0: one call per chunk).
        max_workers: Calls in flight at once.
        max_tokens: Cap on each reply's tokens (None: the server's default).
        max_reply_chars: Longer replies fail their chunk unread.
    """

    def __init__(
        self,
        llm: LLM,
        prompt: DomainPrompt,
        *,
        rules: QualityRules | None = None,
        gleanings: int = 0,
        max_relationships: int | None = None,
        pack_chars: int = 0,
        max_workers: int = 4,
        max_tokens: int | None = None,
        max_reply_chars: int = MAX_REPLY_CHARS,
    ) -> None:
        rules = rules or QualityRules()
        if max_relationships is not None:
            rules = replace(rules, max_relationships=max_relationships)
        if prompt.schema is not None and rules.schema is None:
            rules = replace(rules, schema=prompt.schema)
        if rules.check_in_text and not rules.example_names:
            names = {e.name for x in prompt.examples for e in x.graph.entities}
            rules = replace(rules, example_names=tuple(sorted(names)))
        self.llm = llm
        self.prompt = prompt
        self.rules = rules
        self.gleanings = max(0, gleanings)
        self.pack_chars = max(0, pack_chars)
        self.max_workers = max(1, max_workers)
        self.max_tokens = max_tokens
        self.max_reply_chars = max_reply_chars

    def with_schema(self, schema: GraphSchema) -> LLMExtractor:
        """This extractor held to ``schema`` (prompt and filter), sharing its model."""
        made = copy.copy(self)
        made.prompt = with_schema(self.prompt, schema)
        made.rules = replace(self.rules, schema=schema)
        return made

    @property
    def name(self) -> str:
        """``llm``."""
        return "llm"

    @property
    def version(self) -> str:
        """Model, prompt id and version, gleaning rounds, packing and quality rules."""
        return (
            f"{self.llm.model_id}|{self.prompt.id}@{self.prompt.version}"
            f"|glean{self.gleanings}|pack{self.pack_chars}|quality:{rules_digest(self.rules)}"
        )

    def extract(
        self, chunks: Sequence[ChunkText], *, raise_errors: bool = False
    ) -> list[ExtractionResult]:
        """Extract every chunk; one result per chunk, in input order. A chunk whose
        call failed or whose reply cannot be used gets a result with ``error`` set.

        Args:
            chunks: The chunks.
            raise_errors: Raise a failed call's :class:`ProviderError` instead (a
                preview of one text, where there is no other chunk to go on with).

        Raises:
            ProviderSkipped: The model was not called (its breaker is open): the run
                should stop and leave the chunks' attempts alone.
            ProviderError: Only with ``raise_errors``.
        """
        packs = pack_chunks(chunks, self.pack_chars)
        one = self._extract_pack if raise_errors else self._extract_isolated
        if self.max_workers == 1 or len(packs) <= 1:
            done = [one(pack) for pack in packs]
        else:
            pool = ThreadPoolExecutor(max_workers=min(self.max_workers, len(packs)))
            try:
                # each call in the caller's context: its project's reply cache and
                # the request's spending meter
                done = list(pool.map(in_context(one), packs))
            finally:
                # On Ctrl-C, do not wait for calls in flight (up to the deadline): the
                # runner releases the claims and the replies land in the cache.
                pool.shutdown(wait=False, cancel_futures=True)
        return [result for results in done for result in results]

    def _extract_isolated(self, pack: Sequence[ChunkText]) -> list[ExtractionResult]:
        """:meth:`_extract_pack`, with a failed call failing this pack's chunks only."""
        try:
            return self._extract_pack(pack)
        except ProviderSkipped:
            raise
        except ProviderError as exc:
            error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a bug on one reply must not fail the other chunks
            error = f"internal_error: {type(exc).__name__}: {exc}"
        return [
            ExtractionResult(
                chunk_id=c.id,
                extractor=self.name,
                model=self.llm.model_id,
                prompt_id=self.prompt.id,
                prompt_version=self.prompt.version,
                error=storable(error),
            )
            for c in pack
        ]

    def estimate(self, texts: Sequence[str]) -> tuple[int, int, float | None]:
        """Forecast (prompt tokens, completion tokens, US dollars or None) for a dry
        run, with :func:`estimate_tokens`' heuristic and the model's price."""
        prompt, completion = estimate_tokens(
            [ChunkText(str(i), t) for i, t in enumerate(texts)],
            self.prompt,
            gleanings=self.gleanings,
            pack_chars=self.pack_chars,
        )
        return prompt, completion, self.llm.estimate_cost(Usage(prompt, completion))

    def _extract_pack(self, pack: Sequence[ChunkText]) -> list[ExtractionResult]:
        started = time.perf_counter()
        packed = len(pack) > 1
        messages = (
            render_packed(self.prompt, [c.text for c in pack])
            if packed
            else render(self.prompt, pack[0].text)
        )
        gleaned = glean(
            self.llm,
            messages,
            self.prompt,
            rounds=self.gleanings,
            json_schema=output_schema(packed=packed, graph=self.prompt.schema),
            max_tokens=self.max_tokens,
            max_reply_chars=self.max_reply_chars,
        )
        parts = _split(gleaned.parsed, pack) if packed else [gleaned.parsed]
        seconds = (time.perf_counter() - started) / len(pack)
        results = []
        for index, (chunk, part) in enumerate(zip(pack, parts, strict=True)):
            result = self._result(chunk, gleaned, part, seconds, index, len(pack))
            if result.error is None:
                result = apply_quality(result, chunk.text, self.rules)
            results.append(result)
        return results

    def _result(
        self,
        chunk: ChunkText,
        gleaned: Gleaned,
        part: Parsed,
        seconds: float,
        index: int,
        size: int,
    ) -> ExtractionResult:
        completions = gleaned.completions
        prompt_tokens = sum(c.usage.prompt_tokens for c in completions)
        completion_tokens = sum(c.usage.completion_tokens for c in completions)
        calls = sum(1 for c in completions if not c.cached)
        spent = [c.usage for c in completions if not c.cached]
        costs = [self.llm.estimate_cost(u) for u in spent]
        cost = None if None in costs else sum(c for c in costs if c is not None)
        first = index == 0
        error = gleaned.error
        return ExtractionResult(
            chunk_id=chunk.id,
            graph=part.graph if error is None else ExtractedGraph(),
            rejected=list(part.rejected),
            extractor=self.name,
            model=completions[0].model or self.llm.model_id,
            prompt_id=self.prompt.id,
            prompt_version=self.prompt.version,
            prompt_tokens=_share(prompt_tokens, index, size),
            completion_tokens=_share(completion_tokens, index, size),
            calls=calls if first else 0,
            cost_usd=(cost if first else 0.0) if cost is not None else None,
            seconds=seconds,
            error=error,
            raw=[_raw(c.text) for c in completions] if error is not None else [],
        )


_RAW_KEPT = 20_000


def _raw(text: str) -> str:
    """A reply as kept with a failed chunk: its start, escaped so any store keeps it."""
    if len(text) > _RAW_KEPT:
        text = text[:_RAW_KEPT] + f"… [{len(text) - _RAW_KEPT:,} more characters]"
    return storable(text)


def _share(total: int, index: int, size: int) -> int:
    """``total`` split over ``size`` chunks so the shares sum to it exactly."""
    return total // size + (1 if index < total % size else 0)


def pack_chunks(chunks: Sequence[ChunkText], pack_chars: int) -> list[list[ChunkText]]:
    """Group consecutive chunks shorter than ``pack_chars`` into packs of at most
    ``pack_chars`` characters; other chunks go alone (0: every chunk alone)."""
    packs: list[list[ChunkText]] = []
    size = 0
    for chunk in chunks:
        small = 0 < len(chunk.text) < pack_chars
        if small and packs and size and size + len(chunk.text) <= pack_chars:
            packs[-1].append(chunk)
            size += len(chunk.text)
        else:
            packs.append([chunk])
            size = len(chunk.text) if small else 0
    return packs


def _split(parsed: Parsed, pack: Sequence[ChunkText]) -> list[Parsed]:
    """Per-chunk parses from a packed reply, by each item's chunk tag.

    An item without a valid tag goes to the chunks whose text mentions its name (both
    endpoints for a relationship), else to the first chunk, where the quality filter
    judges it.
    """
    texts = [normalize_name(c.text) for c in pack]
    parts = [Parsed(format=parsed.format) for _ in pack]

    def homes(tag: int | None, *names: str) -> list[int]:
        if tag is not None and 1 <= tag <= len(pack):
            return [tag - 1]
        found = [i for i, t in enumerate(texts) if all(normalize_name(n) in t for n in names)]
        return found or [0]

    for entity, tag in zip(parsed.graph.entities, parsed.entity_tags, strict=True):
        for i in homes(tag, entity.name):
            parts[i].add_entity(entity.model_copy())
    for relation, tag in zip(parsed.graph.relationships, parsed.relation_tags, strict=True):
        for i in homes(tag, relation.source, relation.target):
            parts[i].add_relation(relation.model_copy())
    parts[0].rejected.extend(parsed.rejected)
    return parts


def estimate_tokens(
    chunks: Sequence[ChunkText],
    prompt: DomainPrompt,
    *,
    gleanings: int = 0,
    pack_chars: int = 0,
) -> tuple[int, int]:
    """Estimate the tokens an extraction would take, for ``--dry-run``.

    A heuristic, not a tokenizer: a token is about 4 characters of English. The prompt
    side is the rendered messages (system prompt with schema and examples, plus the
    chunk) per call; the reply is :data:`FIRST_REPLY_RATIO` of the chunk's characters
    (at least :data:`MIN_REPLY_TOKENS` tokens). Each gleaning round re-sends the
    history (prompt, previous replies, the follow-up) and expects
    :data:`GLEANING_REPLY_RATIO` of the chunk's characters back.

    Returns:
        ``(prompt_tokens, completion_tokens)`` for all chunks together.
    """
    prompt_tokens = completion_tokens = 0
    follow_up = len(gleaning_message(prompt).content)
    for pack in pack_chunks(chunks, pack_chars):
        texts = [c.text for c in pack]
        messages: list[Message] = (
            render_packed(prompt, texts) if len(pack) > 1 else render(prompt, texts[0])
        )
        sent = sum(len(m.content) for m in messages)
        chars = sum(len(t) for t in texts)
        reply = max(MIN_REPLY_TOKENS * CHARS_PER_TOKEN, int(chars * FIRST_REPLY_RATIO))
        prompt_tokens += sent // CHARS_PER_TOKEN
        completion_tokens += reply // CHARS_PER_TOKEN
        history = sent + reply
        for _ in range(gleanings):
            more = max(MIN_REPLY_TOKENS * CHARS_PER_TOKEN, int(chars * GLEANING_REPLY_RATIO))
            history += follow_up
            prompt_tokens += history // CHARS_PER_TOKEN
            completion_tokens += more // CHARS_PER_TOKEN
            history += more
    return prompt_tokens, completion_tokens
