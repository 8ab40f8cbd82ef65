from events import AuditLog, Counter, EventBus


def test_publish_calls_handlers_in_order():
    bus = EventBus()
    bus.subscribe("ping", lambda p: "first")
    bus.subscribe("ping", lambda p: "second")
    assert bus.publish("ping") == ["first", "second"]


def test_unsubscribe():
    bus = EventBus()
    handler = lambda p: 1  # noqa: E731
    bus.subscribe("x", handler)
    bus.unsubscribe("x", handler)
    assert bus.publish("x") == []


def test_counter_counts_each_event():
    bus = EventBus()
    counter = Counter(bus, ["login", "logout"])
    bus.publish("login")
    bus.publish("login")
    bus.publish("logout")
    assert counter.counts == {"login": 2, "logout": 1}


def test_audit_log_names_the_event():
    bus = EventBus()
    audit = AuditLog(bus, ["signup", "purchase", "refund"])
    bus.publish("signup", {"user": "ana"})
    bus.publish("purchase", {"user": "ana", "sku": "T-1"})
    assert audit.lines == ["signup: user", "purchase: sku,user"]


def test_payload_is_copied():
    bus = EventBus()
    payload = {"a": 1}
    bus.publish("e", payload)
    payload["a"] = 2
    assert bus.history == [("e", {"a": 1})]
