"""Search-quality queries for the demo catalog (``build_catalog()``: seed 7, 1200 products).

Each query was written by hand from one product's traits (``Catalog.traits[sku]``:
product type, material, features, use case, colour), the way a shopper would describe
it: synonyms and paraphrases ("head torch" for headlamp, "vise" for vice, "pet food
dispenser" for automatic feeder), not the catalog's sentences. About ten products share
each product type, so a query names enough details (material, a feature, the use, the
colour) to single out its product, as a shopper who knows what they want would.
"""

# One query per line reads best as a table.
# ruff: noqa: E501
from __future__ import annotations

# sku -> query
# fmt: off
QUERIES: dict[str, str] = {
    "DM-00037": "acacia chopping board with carry handles for a cheese and cured meat platter, mustard",
    "DM-00049": "coffee mill with steel burrs and a static-free grounds cup for morning pour over, dark grey",
    "DM-00061": "fast 3kW water kettle with adjustable temperature settings for pour over, black brushed steel",
    "DM-00073": "big steel soup pot with a pasta strainer basket and tight lid for simmering bone broth",
    "DM-00038": "titanium hiking sticks with quick-lock length adjustment and carbide tips for going downhill",
    "DM-00050": "waterproof head torch, 900 lumens, green, for jobs around the tent at night",
    "DM-00062": "lightweight titanium backpacking burner with a folding pan stand and flame adjustment, red",
    "DM-00074": "hollow fiber water purifier rated 0.1 micron that lasts 2000 litres, for travelling overseas",
    "DM-00039": "record player with a USB port to convert vinyl to digital files and a built-in phono stage",
    "DM-00051": "Atmos TV speaker bar with a wireless sub and eARC for movie nights, blue aluminium",
    "DM-00063": "pair of walnut desk speakers with magnet-attached grilles and rear-ported bass, orange",
    "DM-00075": "steel digital-to-analogue converter for hi-fi at the desk, 384kHz 32-bit, physical volume dial",
    "DM-00040": "27 inch 4K IPS screen that charges a laptop over USB-C at 90W, for editing photos and video",
    "DM-00052": "aluminium notebook riser with grippy silicone feet and a vented open back, better neck posture",
    "DM-00064": "portable encrypted solid state drive, 2000 MB/s, for photographers shooting in the field",
    "DM-00076": "white autofocus web camera with a privacy cover and two noise cancelling mics for live streams",
    "DM-00041": "handmade stoneware vase, speckled matt with a reactive glaze and slim neck, for dried pampas, pink",
    "DM-00053": "beeswax candle scented with essential oils whose lid works as a coaster, for cozy winter nights",
    "DM-00065": "braided jute floor rug with fringe and an anti-slip underside, good for renters",
    "DM-00077": "white linen pillow case with hand embroidery, concealed zipper and piping to revive an old couch",
    "DM-00042": "blue velvet upholstered bed base with a strengthened middle support for the spare room",
    "DM-00054": "marble coffee table with a lift top and secret drawer on tapered legs, for game nights",
    "DM-00066": "walnut media console with cable management and soft closing drawers to hide TV clutter",
    "DM-00078": "swivelling cane lounge chair with an ottoman and walnut legs for a bedroom nook",
    "DM-00043": "cast iron outdoor heater on wheels with an anti-tip shut-off for restaurant terraces",
    "DM-00055": "rattan solar lights that switch on at dusk and flicker like candles, for a garden party",
    "DM-00067": "wooden larch composter with air vents for a small city garden",
    "DM-00079": "green mower with a 55 l clippings collector and a mulch function for a big lawn",
    "DM-00044": "exercise bands in five strengths, colour coded, for physio rehab",
    "DM-00056": "one-piece cast iron kettle bell with a broad coated grip and flat bottom for a home garage gym",
    "DM-00068": "45cm cork massage roller with ridges for knots, for back pain from sitting at a desk all day",
    "DM-00080": "indoor cycling bike with Bluetooth heart rate pairing and wheels to move it, for winter workouts",
    "DM-00045": "500 piece construction brick set with luminous bricks and an ideas booklet for car trips",
    "DM-00057": "metal remote controlled 4x4 toy car as a birthday gift for a ten to twelve year old",
    "DM-00069": "organic cotton teddy with stitched eyes to comfort a child staying in hospital",
    "DM-00081": "chemistry kit using everyday kitchen chemicals to grow crystals for a school science fair",
    "DM-00046": "squalane face moisturiser, not tested on animals, for dry skin in winter",
    "DM-00058": "stubble shaver with titanium blades and a battery that lasts an hour and a half",
    "DM-00070": "solid rosemary shampoo without sulfates for a travel wash bag",
    "DM-00082": "aloe sun cream SPF50 that leaves no white residue, for children playing outside",
    "DM-00047": "timed pet food dispenser with portion scheduling and a recorded voice message for owners at work",
    "DM-00059": "mesh travel crate for a cat or dog with a soft fleece mat for long drives",
    "DM-00071": "self-cleaning steel litter tray with a hood and a low step for elderly cats, for a small apartment",
    "DM-00083": "cotton rope dog toy that floats and bounces, with ridges to clean teeth, for a teething puppy",
    "DM-00048": "circular saw with a laser line, 56 degree bevel and blade brake, for cutting plywood sheets",
    "DM-00060": "foldable birch ply work table with an integrated vise for the garage",
    "DM-00072": "wall scanner that beeps so you avoid drilling into concealed pipes",
    "DM-00084": "true-RMS digital meter for testing a car battery",
}
# fmt: on
