"""Full-text search of an agent's memory documents, episodic summaries and vault text, in the database engine.

One query per search, on the indexes of migration ``0015`` (:mod:`agentfy.store.search_index`): FTS5 on
SQLite, ranked by ``bm25``; ``tsvector`` columns with GIN indexes on PostgreSQL, ranked by ``ts_rank``.  The
tenant, the agent and the memory SCOPE are conditions of that query, never a filter applied to its result, so a
row of another scope cannot reach Python at all.  Memory documents and episodic summaries are the SCOPE's
(``user_id``; ``None`` is the agent's own memory, stored as the empty scope); vault documents are the agent's
and have no SCOPE.

Query text comes from a model or a person, so it is never query syntax: on SQLite each whitespace-separated word
becomes a quoted FTS5 string (an embedded ``"`` doubled), so ``*``, ``:``, ``NEAR``, ``AND``/``OR``/``NOT``
and parentheses are text to look for; on PostgreSQL the text goes to ``plainto_tsquery``, which has no
operators.  On both engines a hit contains every word of the query (words are lower-cased; punctuation
separates words); a query made only of punctuation finds nothing.

**Hybrid search.** Given the query's vector (:class:`~agentfy.store.repos.vectors.QueryVector`, made by the
agent's own embeddings model), memory documents and summaries are also ranked by their vectors' similarity
(:func:`~agentfy.store.repos.vectors.nearest`, filtered by tenant, agent, SCOPE and model in SQL too), and the
two rankings are merged by reciprocal rank fusion: each hit scores ``1 / (RRF_K + rank)`` in each ranking it is
in, summed.  So a document that shares no word with the query but means the same is found, and one found both
ways comes first.  Without a vector the search is the full-text search alone, exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.errors import InvalidInputError
from agentfy.store.inputs import check_text
from agentfy.store.repos._batch import require_agent
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.vectors import SNIPPET_WORDS, SOURCE_KINDS, QueryVector, memory_filter, nearest
from agentfy.store.search_index import INDEXED_CHARS

Kind = Literal["memory", "episodic", "vault"]
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)
#: What "the agent's memory" is to a search: its notes and the summaries of its past conversations (the
#: ``search_memory`` tool, the run's recall and the API's memory search all look in exactly these).
MEMORY_KINDS: Final[tuple[Kind, ...]] = SOURCE_KINDS  # what has vectors, too
QUERY_MAX_LENGTH: Final = 1_000
LIMIT_MAX: Final = 100
#: How long a snippet is, in words (SQLite counts tokens, PostgreSQL words: about the same), is the vector
#: hits' :data:`~agentfy.store.repos.vectors.SNIPPET_WORDS`: a fused list's snippets are alike.
#: Reciprocal rank fusion's constant: the usual 60, so the first ranks of either list weigh about alike.
RRF_K: Final = 60


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One match: what it is (``kind`` and the row's ``id``), its ``title`` (a path, or a session key and its
    compaction number for a summary), a ``snippet`` of its text around the match, and its ``score`` (higher is
    better; comparable within one search, not across engines)."""

    kind: Kind
    id: str
    title: str
    snippet: str
    score: float


def fts5_match(query: str) -> str:
    """The FTS5 MATCH expression of ``query``: every word a quoted string (``"`` doubled), all of them required."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in query.split())


# -- SQLite: one FTS5 table over all kinds; the filters are on the entries it is joined to ----------------
# The templates' {fields} are filled from constants of this module only (kinds from KINDS), never from input.
_SQLITE: Final = (
    "SELECT e.kind, e.source_id, e.label, "
    "snippet(search_fts, -1, '', '', '…', {words}), -bm25(search_fts, 2.0, 1.0) AS score "
    "FROM search_fts JOIN search_entries AS e ON e.rowid = search_fts.rowid "
    "WHERE search_fts MATCH :match AND e.tenant_id = :tenant_id AND e.agent_id = :agent_id "
    "AND e.kind IN ({kinds}) AND (e.kind = 'vault' OR e.user_id = :user_id) "
    "ORDER BY score DESC, e.source_id LIMIT :limit")

# -- PostgreSQL: each kind's best rows from its own table, then the best of those --------------------------
# The tsquery is a FROM item (computed once per statement, even in a generic plan) and travels with each row to
# the snippet.
_PG_KINDS: Final[dict[Kind, str]] = {
    "memory": ("SELECT 'memory' AS kind, id, path AS title, left(content, {n}) AS body, q, "
               "ts_rank(search_vector, q, 1) AS score FROM memory_documents, {q} "
               "WHERE search_vector @@ q AND tenant_id = :tenant_id AND agent_id = :agent_id "
               "AND user_id = :user_id ORDER BY score DESC, id LIMIT :limit"),
    "episodic": ("SELECT 'episodic' AS kind, id, session_key || ' #' || compaction_count AS title, "
                 "left(summary, {n}) AS body, q, ts_rank(search_vector, q, 1) AS score FROM episodic_summaries, {q} "
                 "WHERE search_vector @@ q AND tenant_id = :tenant_id AND agent_id = :agent_id "
                 "AND user_id = :user_id ORDER BY score DESC, id LIMIT :limit"),
    "vault": ("SELECT 'vault' AS kind, id, path AS title, text_content AS body, q, "
              "ts_rank(search_vector, q, 1) AS score FROM vault_documents, {q} "
              "WHERE search_vector @@ q AND tenant_id = :tenant_id AND agent_id = :agent_id "
              "ORDER BY score DESC, id LIMIT :limit"),
}
_PG_QUERY: Final = "plainto_tsquery('simple', :query) AS q"
#: Any of the words (:func:`any_word_query` made the text: words of letters and digits joined by ``or``).
_PG_ANY_QUERY: Final = "websearch_to_tsquery('simple', :query) AS q"
_PG: Final = ("SELECT kind, id, title, ts_headline('simple', body, q, "
              "'MaxWords={words}, MinWords={min_words}, StartSel=\"\", StopSel=\"\"'), score "
              "FROM ({branches}) AS hits ORDER BY score DESC, id LIMIT :limit")


def any_word_words(query: str) -> list[str]:
    """The words an any-word search looks for: runs of letters and digits, lower-case, distinct, in order
    (punctuation separates words, as both engines' tokenizers do; ``or`` is left out, it is the operator)."""
    found: list[str] = []
    for word in re.findall(r"\w+", query.lower()):
        if word not in found and word != "or":
            found.append(word)
    return found


def _sql(dialect: str, kinds: tuple[Kind, ...], *, any_word: bool = False) -> str:
    """The search statement for these kinds (a few constant strings: the database caches each compiled)."""
    if dialect == "postgresql":
        q = _PG_ANY_QUERY if any_word else _PG_QUERY
        branches = " UNION ALL ".join(f"({_PG_KINDS[kind].format(n=INDEXED_CHARS, q=q)})" for kind in kinds)
        return _PG.format(branches=branches, words=SNIPPET_WORDS, min_words=SNIPPET_WORDS // 3)
    return _SQLITE.format(kinds=", ".join(f"'{kind}'" for kind in kinds), words=SNIPPET_WORDS)


def _check_kinds(kinds: Sequence[str]) -> tuple[Kind, ...]:
    if isinstance(kinds, str) or not kinds:
        raise InvalidInputError(f"invalid kinds {kinds!r}: expected a non-empty list of {', '.join(KINDS)}",
                                field="kinds", value=kinds)
    for kind in kinds:
        if kind not in KINDS:
            raise InvalidInputError(f"invalid kinds {list(kinds)!r}: {kind!r} is not one of {', '.join(KINDS)}",
                                    field="kinds", value=kind)
    return tuple(kind for kind in KINDS if kind in kinds)  # one order, so one statement per set of kinds


def _check_query(query: object) -> str:
    text = check_text(query, "query", max_length=QUERY_MAX_LENGTH)
    if not text.strip():
        raise InvalidInputError(f"invalid query {text!r}: expected words to search for, got only blanks",
                                field="query", value=text)
    return text


def search(tx: Tx, scope: Scope, *, agent_id: str | Agent, user_id: str | None, query: str,
           kinds: Sequence[str] = KINDS, limit: int = 10, any_word: bool = False,
           vector: QueryVector | None = None) -> list[SearchHit]:
    """The agent's best matches for ``query``, best first: at most ``limit`` (1 to :data:`LIMIT_MAX`) hits of
    ``kinds``, memory and summaries of the SCOPE ``user_id`` only (``None``: the agent's own memory).  A hit has
    every word of the query, or with ``any_word`` at least one (:func:`any_word_words`; ranked, so hits with
    more of them come first) — what the run's recall asks with a whole message.  With ``vector`` (the query's
    embedding) memory and summaries near it are hits too, merged by rank (see the module docstring).

    Bad input is :class:`InvalidInputError` naming the value — a blank query, one over
    :data:`QUERY_MAX_LENGTH` characters, an unknown kind, a limit out of range — and an agent that is not the
    tenant's is :class:`~agentfy.store.errors.NotFoundError`: an empty answer would hide the caller's bug.  The
    agent's record (a run's, already resolved) is taken as is (:func:`~agentfy.store.repos._batch.require_agent`).
    """
    agent, user = memory_filter(agent_id, user_id)
    text = _check_query(query)
    wanted = _check_kinds(kinds)
    if type(limit) is not int or not 1 <= limit <= LIMIT_MAX:
        raise InvalidInputError(f"invalid limit {limit!r}: expected an integer from 1 to {LIMIT_MAX}",
                                field="limit", value=limit)
    require_agent(tx, scope, agent_id if isinstance(agent_id, Agent) else agent)
    near = [kind for kind in wanted if kind in ("memory", "episodic")]
    if vector is None or not near:
        return _text_search(tx, scope, agent=agent, user=user, text=text, wanted=wanted, limit=limit,
                            any_word=any_word)
    # Each ranking a little deeper than asked: a hit ranked low in both may belong in the merged top.
    depth = min(LIMIT_MAX, 2 * limit)
    by_text = _text_search(tx, scope, agent=agent, user=user, text=text, wanted=wanted, limit=depth,
                           any_word=any_word)
    by_meaning = nearest(tx, scope, agent_id=agent, user_id=user, query=vector, kinds=near,
                         limit=depth)
    return fuse(by_text, [SearchHit(hit.kind, hit.id, hit.title, hit.snippet, hit.similarity) for hit in by_meaning],
                limit=limit)


def fuse(*rankings: Sequence[SearchHit], limit: int) -> list[SearchHit]:
    """Reciprocal rank fusion of ``rankings`` (each best first): the ``limit`` best by summed
    ``1 / (RRF_K + rank)``, ties by ID; a hit keeps the first ranking's snippet (the text search's, around the
    match), and its score is the fused one."""
    scores: dict[str, float] = {}
    first: dict[str, SearchHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(hit.id, hit)
    order = sorted(scores, key=lambda key: (-scores[key], key))[:limit]
    return [SearchHit(first[key].kind, key, first[key].title, first[key].snippet, scores[key]) for key in order]


def _text_search(tx: Tx, scope: Scope, *, agent: str, user: str, text: str, wanted: tuple[Kind, ...],
                 limit: int, any_word: bool) -> list[SearchHit]:
    """The full-text search alone (its input already checked)."""
    params: dict[str, object] = {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user, "limit": limit}
    if any_word:
        words = any_word_words(text)
        if not words:
            return []
        if tx.db.dialect == "postgresql":
            params["query"] = " or ".join(words)
        else:
            params["match"] = " OR ".join(f'"{word}"' for word in words)
    elif tx.db.dialect == "postgresql":
        params["query"] = text
    else:
        params["match"] = fts5_match(text)
    rows = tx.all(_sql(tx.db.dialect, wanted, any_word=any_word), params)
    return [SearchHit(row[0], row[1], row[2], row[3] or "", float(row[4])) for row in rows]
