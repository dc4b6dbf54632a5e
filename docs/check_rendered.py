"""Check the built HTML documentation in a real headless browser (Chromium).

For every page of the build (``_modules``/``_sources``/``_static`` excepted) it loads the
page in headless Chromium, lets its scripts run, and checks the rendered DOM:

* **math**: every formula (``span``/``div`` of class ``math``) was typeset by MathJax
  (an ``mjx-container``) and no raw TeX delimiter ``\\(`` or ``\\[`` is left;
* **gallery**: each example page shows its figures (``sphx_glr_*.png`` present on disk);
* **API**: each estimator page documents the methods the class has among ``fit``,
  ``transform``, ``fit_transform``, ``predict``, ``predict_proba``, ``score``,
  ``get_params`` and ``set_params``;
* **network**: the page requested no external URL (from Chromium's net log: requests
  whose initiator is the page; the browser's own background requests are ignored).

Usage (Chromium from the system packages, e.g. ``apt-get install chromium``)::

    python -m sphinx -b html docs /tmp/html
    python docs/check_rendered.py /tmp/html [--jobs 3] [--chromium /usr/bin/chromium]
"""

import argparse
import html
import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--virtual-time-budget=15000"]
METHODS = ["fit", "transform", "fit_transform", "predict", "predict_proba", "score",
           "get_params", "set_params"]
MATH = re.compile(r'<(span|div) class="math[^"]*">')


def render(chromium, page):
    """Rendered DOM of ``page`` and the external URLs it requested."""
    with tempfile.TemporaryDirectory() as tmp:
        netlog = Path(tmp) / "net.json"
        proc = subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={tmp}/profile", f"--log-net-log={netlog}",
             "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120)
        external = []
        if netlog.exists():
            log = json.loads(netlog.read_text() or "{}")
            types = {v: k for k, v in log.get("constants", {}).get("logEventTypes", {}).items()}
            for event in log.get("events", []):
                params = event.get("params", {})
                url = params.get("url", "")
                # requests of the page carry its (opaque: "null") origin; Chromium's own
                # background requests have "not an origin"
                if (types.get(event["type"]) == "URL_REQUEST_START_JOB"
                        and url.startswith(("http://", "https://"))
                        and params.get("initiator") != "not an origin"):
                    external.append(url)
    return proc.stdout, sorted(set(external))


def check_math(source, dom):
    n_math = len(MATH.findall(source))
    if not n_math:
        return []
    problems = []
    n_typeset = dom.count("<mjx-container")
    if n_typeset < n_math:
        problems.append(f"{n_math} formulas, {n_typeset} typeset by MathJax")
    text = html.unescape(re.sub(r"<script.*?</script>|<[^>]+>", "", dom, flags=re.S))
    if "\\(" in text or "\\[" in text:
        problems.append("raw TeX delimiters left in the page")
    return problems


def check_gallery(page, dom):
    images = re.findall(r'<img[^>]+src="([^"]*sphx_glr_[^"]+\.png)"', dom)
    images = [src for src in images if "thumb" not in src]
    if not images:
        return ["no figure"]
    missing = [src for src in images if not (page.parent / src).is_file()]
    return [f"missing image {src}" for src in missing]


def check_api(page, dom):
    name = page.stem
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError):
        return []
    if not inspect.isclass(obj) or not hasattr(obj, "fit"):
        return []
    expected = [m for m in METHODS if callable(getattr(obj, m, None))]
    return [f"method {m} not documented" for m in expected if f'id="{name}.{m}"' not in dom]


def check_page(chromium, root, page):
    source = page.read_text(encoding="utf-8", errors="replace")
    dom, external = render(chromium, page)
    if not dom.strip():
        return page, ["empty DOM (page did not load)"], {}
    problems = check_math(source, dom)
    rel = page.relative_to(root).as_posix()
    stats = {"math": len(MATH.findall(source))}
    if rel.startswith("auto_examples/plot_"):
        problems += check_gallery(page, dom)
        stats["gallery"] = 1
    if rel.startswith("gen_modules/"):
        api = check_api(page, dom)
        problems += api
        stats["api"] = 1
    problems += [f"external request {url}" for url in external]
    return page, problems, stats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path, help="the HTML build directory")
    parser.add_argument("--chromium", default=shutil.which("chromium")
                        or shutil.which("chromium-browser") or "chromium")
    parser.add_argument("--jobs", type=int, default=2, help="browsers run at the same time")
    args = parser.parse_args(argv)
    root = args.build.resolve()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    skipped = {"_modules", "_sources", "_static", "_images", "_downloads"}
    pages = sorted(p for p in root.rglob("*.html")
                   if not skipped & set(p.relative_to(root).parts))
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda p: check_page(args.chromium, root, p), pages))
    failed = [(p, probs) for p, probs, _ in results if probs]
    n_math = sum(s.get("math", 0) for _, _, s in results)
    n_math_pages = sum(1 for _, _, s in results if s.get("math"))
    n_gallery = sum(s.get("gallery", 0) for _, _, s in results)
    n_api = sum(s.get("api", 0) for _, _, s in results)
    print(f"{len(pages)} pages rendered: {n_math} formulas on {n_math_pages} pages, "
          f"{n_gallery} gallery examples, {n_api} API pages")
    for page, problems in failed:
        for problem in problems:
            print(f"FAIL {page.relative_to(root)}: {problem}")
    print("OK" if not failed else f"{len(failed)} pages with problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
