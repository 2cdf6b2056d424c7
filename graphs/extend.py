"""A graph's shape as data: its nodes and how each one leaves, so extensions can be inserted on its
edges and the result checked before LangGraph compiles it.

Each node has one exit: the next node, or a ``Route`` (a router and the names it may return).
Inserting a node on an edge redirects that exit (a route's name is mapped to the inserted node, so
routers keep returning the names they know). What cannot be done is an error naming the extension:
an edge that does not exist, a ``Send`` fan-out (its payload is addressed to the worker itself), a
name already taken, a route to a node that does not exist, or a loop that passes no budget check.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Callable, Literal, Union, get_args, get_origin, get_type_hints

from langgraph.graph import END, START, StateGraph

from agentic_rag.baug.policy import ABSTAIN
from agentic_rag.budget import can_afford
from agentic_rag.configuration import Settings
from agentic_rag.extensions import (
    ERROR_KEY,
    EXTENSION_FAILED,
    FLAGS_KEY,
    ROUTE_KEY,
    Extension,
    ExtensionError,
    check_request,
    state_keys,
)
from agentic_rag.nodes import EXTENSION_ROLE, ROLE, Node, timed
from agentic_rag.state import RAGState

_FAILED = "extension_failed"  # the route an extension node takes once it has failed


@dataclass
class Route:
    """A router and where it may go. ``targets`` left out are read from the router's return type, so a
    graph's router says its destinations once: ``-> Literal[Node.A, Node.B]``, and ``| list[Send]`` for
    a fan-out to the nodes in ``sends``."""

    router: Callable[..., Any]
    targets: tuple[str, ...] = ()
    sends: frozenset[str] = frozenset()  # targets reached by ``Send``: nothing can be inserted in front of them
    mapping: dict[str, str] = field(default_factory=dict)  # a target's name -> the node now in front of it
    labels: dict[str, str] = field(default_factory=dict)  # a target's name -> the decision that takes it (drawn)

    def __post_init__(self) -> None:
        if not self.targets:
            self.targets = (*sorted(self.sends), *typed_targets(self.router))

    def successors(self) -> list[str]:
        return [self.mapping.get(t, t) for t in self.targets]

    def drawn_labels(self) -> dict[str, str]:
        """Each edge's label by the node it now leads to (an inserted extension takes its target's)."""
        return {self.mapping.get(t, t): label for t, label in self.labels.items()}


Exit = str | Route


def typed_targets(router: Callable[..., Any]) -> tuple[str, ...]:
    """The node names in a router's ``Literal[...]`` return type, in the order written (none: untyped)."""
    returned = get_type_hints(router).get("return")
    parts = get_args(returned) if get_origin(returned) in (Union, UnionType) else (returned,)
    return tuple(str(name) for part in parts if get_origin(part) is Literal for name in get_args(part))


class Shape:
    def __init__(self, start: str, budget_checked: frozenset[str]) -> None:
        self.nodes: dict[str, Callable[..., Any]] = {}
        self.exits: dict[str, Exit] = {START: start}
        self.guarded = set(budget_checked)  # nodes that check the budget before anything loops back
        self.extensions: list[str] = []
        self._tails: dict[str, str] = {}  # node -> the last extension inserted right after it

    def add(self, name: str, fn: Callable[..., Any], exit: Exit) -> None:
        self.nodes[name] = fn
        self.exits[name] = exit

    def successors(self, name: str) -> list[str]:
        exit = self.exits[name]
        return exit.successors() if isinstance(exit, Route) else [exit]

    def edges(self) -> list[tuple[str, str]]:
        return [(a, b) for a in self.exits for b in self.successors(a)]

    # -- inserting ------------------------------------------------------------------------------
    def insert(self, ext: Extension) -> None:
        taken = set(self.nodes) | {START, END} | set(state_keys())
        if ext.name in taken:
            what = "a state key" if ext.name in state_keys() else "a node"
            raise ExtensionError(f"extension {ext.name}: the name is already {what} of the graph")
        for end, node in (("after", ext.after), ("before", ext.before)):
            if node is not None and node not in self.nodes:
                raise ExtensionError(f"extension {ext.name}: {end}={node!r} is not a node of the graph "
                                     f"(nodes: {', '.join(self.nodes)})")
        for target in ext.routes:
            if target not in self.nodes and target != END:
                raise ExtensionError(f"extension {ext.name}: route to {target!r}, which is not a node of the graph")
        if ext.before is None:
            led_to = self._insert_after(ext)
        else:
            sources = [self._edge_source(ext.after, ext.before, ext.name)] if ext.after else \
                [s for s in self.exits if ext.before in self.successors(s)]
            for source in sources:
                self._refuse_send(source, ext.before, ext.name)
            for source in sources:
                self._redirect(source, ext.before, ext.name)
            led_to = [ext.before]
            self.exits[ext.name] = ext.before
        if ext.router is not None:
            lost = [n for n in led_to if n not in ext.routes]
            if lost:
                raise ExtensionError(f"extension {ext.name}: its routes must include {', '.join(lost)}, "
                                     f"where its edge led")
            self.exits[ext.name] = Route(_chosen_route, tuple(ext.routes))
            if ext.bounded:
                self.guarded.add(ext.name)
        self.nodes[ext.name] = _checked_node(ext)
        self.extensions.append(ext.name)

    def _insert_after(self, ext: Extension) -> list[str]:
        source = self._tails.get(ext.after, ext.after)
        exit = self.exits[source]
        if isinstance(exit, Route) and ext.router is not None:
            raise ExtensionError(f"extension {ext.name}: {ext.after} already routes with a router; insert a "
                                 f"routed extension on one of its edges (after= and before=)")
        self.exits[ext.name] = exit
        self.exits[source] = ext.name
        self._tails[ext.after] = ext.name
        return self.successors(ext.name)

    def _edge_source(self, a: str, b: str, name: str) -> str:
        """The node whose exit leads into ``b`` on the way from ``a`` (past extensions already there)."""
        todo, seen = [a], set()
        while todo:
            node = todo.pop(0)
            if node in seen:
                continue
            seen.add(node)
            succ = self.successors(node)
            if b in succ:
                return node
            todo += [s for s in succ if s in self.extensions]
        raise ExtensionError(f"extension {name}: there is no edge {a} -> {b} "
                             f"({a} leads to {', '.join(self.successors(a))})")

    def _refuse_send(self, source: str, target: str, name: str) -> None:
        exit = self.exits[source]
        if isinstance(exit, Route) and any(exit.mapping.get(t, t) == target for t in exit.sends):
            raise ExtensionError(f"extension {name}: {source} -> {target} is a Send fan-out (one {target} per "
                                 f"anchor); nothing can be inserted on it")

    def _redirect(self, source: str, target: str, node: str) -> None:
        exit = self.exits[source]
        if isinstance(exit, Route):
            for t in exit.targets:
                if exit.mapping.get(t, t) == target:
                    exit.mapping[t] = node
        else:
            self.exits[source] = node

    # -- checking and compiling -----------------------------------------------------------------
    def check_loops(self) -> None:
        """Every cycle must pass a node that checks the budget; a cycle that does not is an error."""
        graph = {n: [s for s in self.successors(n) if s in self.nodes and s not in self.guarded]
                 for n in self.nodes if n not in self.guarded}
        state: dict[str, int] = {}
        stack: list[str] = []

        def visit(node: str) -> list[str] | None:
            state[node] = 1
            stack.append(node)
            for nxt in graph[node]:
                if state.get(nxt) == 1:
                    return stack[stack.index(nxt):] + [nxt]
                if nxt not in state:
                    found = visit(nxt)
                    if found:
                        return found
            stack.pop()
            state[node] = 2
            return None

        for node in graph:
            if node not in state:
                cycle = visit(node)
                if cycle:
                    culprit = next((n for n in cycle if n in self.extensions), cycle[0])
                    raise ExtensionError(
                        f"extension {culprit}: the loop {' -> '.join(cycle)} passes no budget check; route it "
                        f"through {' or '.join(sorted(self.guarded))}, or declare bounded=True")

    def compile(self, state_schema: type, input_schema: type, name: str, output_schema: type | None = None,
                context_schema: type | None = None):
        g = StateGraph(state_schema, context_schema=context_schema, input_schema=input_schema,
                       output_schema=output_schema)
        # plain strings from here on: what LangGraph stores, draws and checkpoints
        exits = {node: _unless_failed(exit) if node in self.extensions and Node.FINALIZE in self.nodes else exit
                 for node, exit in self.exits.items()}  # a failed extension ends its question
        for node, fn in self.nodes.items():
            exit = exits[node]
            g.add_node(str(node), fn, metadata=node_metadata(node, exit.drawn_labels() if isinstance(exit, Route) else None))
        for node, exit in exits.items():
            if isinstance(exit, Route):
                g.add_conditional_edges(str(node), exit.router,
                                        {str(t): str(exit.mapping.get(t, t)) for t in exit.targets})
            else:
                g.add_edge(str(node), str(exit))
        return g.compile(name=name)


def node_metadata(name: str, routes: dict[str, str] | None = None) -> dict[str, Any]:
    """What a drawing reads off a compiled node: its role in the design and, for a router, the
    decision that takes each of its edges (LangGraph keeps both as the node's ``metadata``)."""
    return {"role": ROLE.get(name, EXTENSION_ROLE), **({"routes": {str(k): v for k, v in routes.items()}} if routes else {})}


def _unless_failed(exit: Exit) -> Route:
    """An extension node's exit, with a way straight to finalize once the extension has failed."""
    inner = exit.router if isinstance(exit, Route) else (lambda state, config: exit)
    targets = exit.targets if isinstance(exit, Route) else (exit,)
    mapping = dict(exit.mapping) if isinstance(exit, Route) else {}

    def route(state: dict, config) -> Any:
        return _FAILED if state.get(ERROR_KEY) else inner(state, config)

    labels = dict(exit.labels) if isinstance(exit, Route) else {}
    return Route(route, (*targets, _FAILED), mapping={**mapping, _FAILED: Node.FINALIZE},
                 labels={**labels, _FAILED: "extension failed"})


def _view(ext: Extension, state: dict[str, Any]) -> dict[str, Any]:
    return {k: state[k] for k in ext.reads if k in state}


def _checked_node(ext: Extension) -> Callable[..., Any]:
    """The extension's node as the graph runs it: it sees what it reads, may write what it declared,
    and is recorded in latency and the trace like every other node. Its router, if it has one, runs
    here too, on the state as the node left it, so that a router that raises is caught like the node.
    Either one raising, or breaking what it declared, ends the question as ABSTAIN_EXTENSION_FAILED
    with the error in the trace: the run goes on, as it does past an unreachable model."""

    def node(state: dict, config) -> dict[str, Any]:
        try:
            update = checked(state, config)
            if ext.router is not None:
                update = {**update, ROUTE_KEY: _route(ext, state, update, config)}
            return update
        except Exception as exc:  # noqa: BLE001 - whatever the extension raises fails its question only
            error = {"extension": ext.name, "error": f"{type(exc).__name__}: {exc}"}
            return {ERROR_KEY: error, "decision": {"action": ABSTAIN, "reason": EXTENSION_FAILED}}

    def checked(state: dict, config) -> dict[str, Any]:
        update = ext.node(_view(ext, state), config)
        if update is None:
            return {}
        if not isinstance(update, dict):
            raise ExtensionError(f"extension {ext.name} returned a {type(update).__name__}; a node returns a dict update")
        undeclared = sorted(set(update) - set(ext.writes))
        if undeclared:
            raise ExtensionError(f"extension {ext.name} wrote {', '.join(undeclared)}, which it does not declare in writes")
        for name, value in (update.get(FLAGS_KEY) or {}).items():
            if name != ext.name:
                raise ExtensionError(f"extension {ext.name} wrote a request for {name!r}; it may file only its own")
            if value is not None:
                check_request(f"extension {ext.name}", value)
        return update

    node.__name__ = ext.name
    node.__doc__ = ext.description or ext.node.__doc__
    return timed(ext.name)(node)


@functools.cache
def _reducers() -> dict[str, Callable[[Any, Any], Any]]:
    """The state keys LangGraph merges with a reducer instead of replacing (``Annotated[T, fn]``): read
    from the state's type once, not on every routed extension's run."""
    hints = get_type_hints(RAGState, include_extras=True)
    return {k: args[1] for k, t in hints.items() if len(args := get_args(t)) == 2 and callable(args[1])}


def _applied(state: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The state as LangGraph will hold it once ``update`` is written: what a router reads."""
    reducers = _reducers()
    return {**state, **{k: reducers[k](state[k], v) if k in reducers and k in state else v for k, v in update.items()}}


def _route(ext: Extension, state: dict[str, Any], update: dict[str, Any], config) -> str:
    """The route the extension's router chooses; with ``bounded``, the budget check that makes a loop
    through it finite (this run counted: its trace event is written after the node returns)."""
    after = _applied(state, update)
    if ext.bounded:
        settings = Settings.from_runnable_config(config)
        runs = 1 + sum(1 for e in after.get("events") or [] if e.get("node") == ext.name)
        if runs >= settings.budget.MAX_ROUNDS or not can_afford(after, settings, 0):
            return ext.routes[0]
    chosen = ext.router(_view(ext, after), config)
    if chosen not in ext.routes:
        raise ExtensionError(f"extension {ext.name}'s router returned {chosen!r}, not one of {list(ext.routes)}")
    return chosen


def _chosen_route(state: dict, config) -> str:
    """The edge out of a routed extension: where its node's router chose to go."""
    return state[ROUTE_KEY]
