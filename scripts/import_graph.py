"""Measure the package's import graph: top-level modules, upward imports, runtime cycles.

`python scripts/import_graph.py` prints the figures issue 27 asks for, on whatever tree is
checked out (the layer of a module is found by prefix, so older layouts measure too):
modules at the top of `duplex_client/`, imports that run back up the layers (by package),
and import cycles at runtime (strongly connected components of the module graph, with
imports under `if TYPE_CHECKING:` left out, function-local imports counted).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import grimp

#: Layers from the top down, as the `layers` contract in pyproject.toml has them; a module
#: belongs to the first whose prefix it matches. Names of the layout before issue 27 are
#: listed beside the new ones (`duplex_client.run` matches the old `run_options` too), so the
#: tree before the move measures against the same layers. Within the last five layers the
#: modules of one layer may import each other (`:` in the contract).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", ("duplex_cli",)),
    ("eval", ("duplex_client.eval",)),
    ("replay", ("duplex_client.replay", "duplex_client.rederive", "duplex_client.sweep")),
    ("web", ("duplex_client.web",)),
    (
        "run",
        (
            "duplex_client.run",
            "duplex_client.results",
            "duplex_client.live",
            "duplex_client.embedded",
            "duplex_client.listening_report",
        ),
    ),
    ("report", ("duplex_client.report",)),
    (
        "bundle",
        (
            "duplex_client.bundle",
            "duplex_client.payloads",
            "duplex_client.thumbnails",
            "duplex_client.wavfile",
        ),
    ),
    (
        "client/server",
        (
            "duplex_client.client",
            "duplex_client.server",
            "duplex_client.presets",
            "duplex_client.sync",
        ),
    ),
    ("media", ("duplex_client.media",)),
    ("analysis", ("duplex_client.analysis",)),
    ("framing", ("duplex_client.framing",)),
    (
        "protocol",
        (
            "duplex_client.protocol",
            "duplex_client.families",
            "duplex_client.usage",
            "duplex_client.files",
        ),
    ),
)


def layer_of(module: str) -> int | None:
    """The index of a module's layer (0 = top), None for the package root."""
    for index, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (
                module == prefix
                or module.startswith(prefix + ".")
                or module.startswith(prefix + "_")
            ):
                return index
    return None


def runtime_graph() -> grimp.ImportGraph:
    """The import graph of both packages, imports under `if TYPE_CHECKING:` left out."""
    # Only grimp sees the `if TYPE_CHECKING:` guard: an import's `line_contents` is the
    # import line alone, so matching its text let every guarded import count as runtime.
    return grimp.build_graph(
        "duplex_client", "duplex_cli", cache_dir=None, exclude_type_checking_imports=True
    )


def runtime_imports(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    """(importer, imported) pairs into the two packages, from a `runtime_graph`."""
    pairs = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(("duplex_client", "duplex_cli")):
                pairs.add((module, imported))
    return pairs


def sccs(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    out_edges: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        out_edges[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(out_edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(out_edges[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _is_package_init_edge(a: str, b: str) -> bool:
    """A package's `__init__` re-exporting its own submodule (or a submodule importing its
    parent package): not a cycle between ideas."""
    return a.startswith(b + ".") or b.startswith(a + ".")


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    package = root / "duplex_client"
    top = sorted(p.name for p in package.glob("*.py"))
    top_lines = sum(len((package / name).read_text().splitlines()) for name in top)
    total = sum(len(p.read_text().splitlines()) for p in package.rglob("*.py"))
    graph = runtime_graph()
    edges = runtime_imports(graph)
    upward = sorted(
        (a, b)
        for a, b in edges
        if (la := layer_of(a)) is not None and (lb := layer_of(b)) is not None and lb < la
    )
    by_package: dict[tuple[str, str], int] = defaultdict(int)
    for a, b in upward:
        by_package[(_package(a), _package(b))] += 1
    cycles = sccs(set(graph.modules), {(a, b) for a, b in edges if not _is_package_init_edge(a, b)})
    print(f"modules at the top of duplex_client/: {len(top)} ({top_lines} lines): {' '.join(top)}")
    print(f"duplex_client lines: {total}")
    print(f"imports running back up the layers: {len(upward)} ({len(by_package)} package arrows)")
    for (a, b), n in sorted(by_package.items()):
        print(f"  {a} -> {b} ({n})")
    print(f"import cycles at runtime: {len(cycles)}")
    for component in cycles:
        print(f"  {' <-> '.join(component)}")
    # The same graph with each module folded into its top-level package or module.
    tops = {(_package(a), _package(b)) for a, b in edges if _package(a) != _package(b)}
    top_cycles = sccs({_package(m) for m in graph.modules}, tops)
    print(f"import cycles between top-level packages and modules: {len(top_cycles)}")
    for component in top_cycles:
        print(f"  {' <-> '.join(component)}")
    return 0


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


if __name__ == "__main__":
    sys.exit(main())
