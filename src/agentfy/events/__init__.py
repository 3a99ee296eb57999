"""The durable event bus: DomainEvent, the outbox (published in the change's own transaction), workers
that claim, acknowledge, retry and dead-letter, and publish-time ID validation."""
