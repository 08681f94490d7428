"""Check that every gallery example was rendered with its figure.

Run after the HTML build: for each ``examples/gallery/plot_*.py`` the page
``<html>/auto_examples/<name>.html`` must exist and show at least one image
``sphx_glr_<name>_NNN.png`` that exists in the build. Exits 1 with the list
of what is missing.
"""

import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[1]
html = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "doc" / "_build" / "html"
scripts = sorted((root / "examples" / "gallery").glob("plot_*.py"))
problems = []
if not scripts:
    problems.append("no examples/gallery/plot_*.py found")
for script in scripts:
    page = html / "auto_examples" / f"{script.stem}.html"
    if not page.is_file():
        problems.append(f"{script.name}: no page {page}")
        continue
    images = re.findall(rf'<img[^>]+src="([^"]*sphx_glr_{script.stem}_\d+\.png)"', page.read_text())
    if not images:
        problems.append(f"{script.name}: its page shows no figure")
    for src in images:
        if not (page.parent / src).resolve().is_file():
            problems.append(f"{script.name}: image {src} is missing from the build")
if problems:
    print("gallery check failed:\n  " + "\n  ".join(problems))
    sys.exit(1)
print(f"gallery: {len(scripts)} examples, each page shows its figure")
