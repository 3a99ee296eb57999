"""What ``/metrics`` serves, in the Prometheus text format: requests, the pool, the caches, the change feed,
the event bus and the model tokens of this process's runs.

Why most series are read at scrape time (a :class:`Collector`) rather than counted as things happen: the
pool, the caches and the bus already keep their numbers, so a scrape costs one pass over them and the hot
paths pay nothing extra.  Requests are counted by :class:`~agentfy.gateway.observe.RequestObservation`, by
route *template* (``/v1/agents/{agent}``, never the raw path: label values must stay bounded).

Model tokens (``agentfy_model_tokens_total``) are labelled by ``provider`` and ``kind`` (prompt, completion,
cached) only: a tenant, an agent or a model name would make the series unbounded; per-agent usage is in the
database (``GET /v1/usage``).

Each process serves its own counters (a scrape reaches one process; scrape each, or run one process per
host); the event-bus figures come from the database and are the same from every process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agentfy.events import admin
from agentfy.gateway.rpc.broadcast import broadcaster_for
from agentfy.store.changefeed.changes import Change

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState

log = logging.getLogger(__name__)

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
#: Request latency buckets (seconds): a cached read takes well under a millisecond, a write a few.
_LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_LAG_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class GatewayMetrics:
    """The registry of one gateway process and the series it updates as things happen."""

    def __init__(self, gateway: GatewayState) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter("agentfy_http_requests", "HTTP requests answered, by route template and status.",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("agentfy_http_request_duration_seconds",
                                 "Time from the request's first byte to the response's last, by route template.",
                                 ["method", "route"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.feed_lag = Histogram("agentfy_change_feed_lag_seconds",
                                  "Time from a change's commit to this process hearing of it.",
                                  buckets=_LAG_BUCKETS, registry=self.registry)
        self.registry.register(_StateCollector(gateway))
        gateway.db.changes.on_committed(self._heard)  # held weakly by the feed; this object lives with the app

    def _heard(self, change: Change) -> None:
        if change.at is not None:
            self.feed_lag.observe(max(0.0, time.time() - change.at))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """The numbers the pool, the caches, the feed and the bus keep, read at each scrape."""

    def __init__(self, gateway: GatewayState) -> None:
        self.gateway = gateway

    def collect(self) -> Iterator[Metric]:
        gateway = self.gateway
        pool = gateway.db.pool
        connections = GaugeMetricFamily("agentfy_db_pool_connections", "Database connections of this process.",
                                        labels=["state"])
        connections.add_metric(["in_use"], pool.checked_out)
        connections.add_metric(["idle"], pool.idle)
        yield connections
        yield GaugeMetricFamily("agentfy_db_pool_limit", "Most connections this process may hold.",
                                value=pool.settings.limit)
        for cache, hits, misses in (("router", gateway.router.hits, gateway.router.misses),
                                    ("principal", gateway.principals.hits, gateway.principals.misses)):
            yield CounterMetricFamily(f"agentfy_{cache}_cache_hits", f"Look-ups the {cache} cache answered.",
                                      value=hits)
            yield CounterMetricFamily(f"agentfy_{cache}_cache_misses", f"Look-ups the {cache} cache sent to the "
                                      "database.", value=misses)
        yield GaugeMetricFamily("agentfy_change_feed_connected", "1 while this process hears other processes' "
                                "changes (its caches may fill), else 0.", value=int(gateway.db.changes.cacheable))
        yield _broadcasts(gateway)
        yield from _tokens(gateway)
        yield from _bus(gateway)


def _broadcasts(gateway: GatewayState) -> Metric:
    """Run events between processes: sent by this one, dropped unsent, not sent because no other process had
    subscribers of their tenant, received from others, unreadable."""
    feed = gateway.db.changes
    sent = feed.broadcast_stats
    unwatched = broadcaster_for(gateway.db).watches.unwatched if sent else 0
    broadcasts = CounterMetricFamily("agentfy_run_event_broadcasts", "Run events broadcast to or heard from "
                                     "other processes, by outcome.", labels=["outcome"])
    for outcome, n in (("sent", sent.sent if sent else 0), ("dropped", sent.dropped if sent else 0),
                       ("unwatched", unwatched),
                       ("received", feed.stats.broadcasts_received),
                       ("undecodable", feed.stats.undecodable_broadcasts)):
        broadcasts.add_metric([outcome], n)
    return broadcasts


def _tokens(gateway: GatewayState) -> Iterator[Metric]:
    tokens = CounterMetricFamily("agentfy_model_tokens", "Model tokens of this process's runs, by provider and "
                                 "kind (prompt, completion, cached).", labels=["provider", "kind"])
    if gateway.runtime is not None:
        for (provider, kind), n in sorted(gateway.runtime.tokens.snapshot().items()):
            tokens.add_metric([provider, kind], n)
    yield tokens


def _bus(gateway: GatewayState) -> Iterator[Metric]:
    try:
        stats = admin.stats(gateway.db, days=1)
    except Exception:  # a scrape must answer even when the database does not
        log.warning("metrics.bus_stats_failed", exc_info=True)
        return
    events = GaugeMetricFamily("agentfy_events", "Events in the outbox, by status.", labels=["status"])
    for status, n in (("pending", stats.pending), ("processing", stats.processing), ("dead", stats.dead),
                      ("done", stats.done)):
        events.add_metric([status], n)
    yield events
    yield GaugeMetricFamily("agentfy_events_due", "Events due now and not yet claimed (the backlog).",
                            value=stats.lag)
    yield GaugeMetricFamily("agentfy_events_lag_seconds", "How long the oldest due event has waited.",
                            value=stats.oldest_pending_age_seconds or 0.0)
    today = GaugeMetricFamily("agentfy_event_bus_reports_today",
                              "Durable bus counters of the current UTC day (observer warnings, dead letters).",
                              labels=["name"])
    for day in sorted(stats.daily)[-1:]:
        for name, n in sorted(stats.daily[day].items()):
            today.add_metric([name], n)
    yield today
