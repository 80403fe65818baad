"""A small shop catalogue in five languages and queries with known answers, for the
multilingual search benchmark (``bench.multilingual``) and its test.

Each product has the same name and description in en, es, pt, it and fr, as a shop in
each market would write it. The queries are phrased as a shopper types them, not copied
from the names: other word forms (plural/singular), stop words, synonyms, and products
whose words overlap on purpose (a de-shedding brush and a toothbrush; a kitchen knife and
a cutting board) so that matching "de" or "brush" alone ranks the wrong item.
"""

from __future__ import annotations

LANGUAGES = ("en", "es", "pt", "it", "fr")

# sku -> language -> (name, description)
PRODUCTS: dict[str, dict[str, tuple[str, str]]] = {
    "headphones": {
        "en": (
            "Bluetooth Wireless Headphones",
            "Over-ear headphones with active noise cancelling and a 30-hour battery.",
        ),
        "es": (
            "Auriculares inalámbricos Bluetooth",
            "Auriculares de diadema con cancelación activa de ruido y batería de 30 horas.",
        ),
        "pt": (
            "Fones de ouvido Bluetooth sem fio",
            "Fones de ouvido com cancelamento ativo de ruído e bateria de 30 horas.",
        ),
        "it": (
            "Cuffie Bluetooth wireless",
            "Cuffie over-ear con cancellazione attiva del rumore e batteria da 30 ore.",
        ),
        "fr": (
            "Casque sans fil Bluetooth",
            "Casque circum-auriculaire à réduction active du bruit, autonomie de 30 heures.",
        ),
    },
    "toothbrush": {
        "en": (
            "Electric Toothbrush",
            "Rechargeable sonic toothbrush with three brushing modes and a travel case.",
        ),
        "es": (
            "Cepillo de dientes eléctrico",
            "Cepillo dental sónico recargable con tres modos de cepillado y estuche de viaje.",
        ),
        "pt": (
            "Escova de dentes elétrica",
            "Escova dental sônica recarregável com três modos de escovação e estojo de viagem.",
        ),
        "it": (
            "Spazzolino elettrico",
            "Spazzolino sonico ricaricabile con tre modalità di pulizia e custodia da viaggio.",
        ),
        "fr": (
            "Brosse à dents électrique",
            "Brosse à dents sonique rechargeable, trois modes de brossage et étui de voyage.",
        ),
    },
    "knife": {
        "en": (
            "Chef's Kitchen Knife 20 cm",
            "Forged stainless steel chef knife for slicing, dicing and chopping.",
        ),
        "es": (
            "Cuchillo de cocina de chef 20 cm",
            "Cuchillo cebollero de acero inoxidable forjado para cortar, picar y trocear.",
        ),
        "pt": (
            "Faca de cozinha de chef 20 cm",
            "Faca de chef em aço inoxidável forjado para fatiar, picar e cortar.",
        ),
        "it": (
            "Coltello da cucina da chef 20 cm",
            "Coltello da chef in acciaio inox forgiato per affettare, tagliare e tritare.",
        ),
        "fr": (
            "Couteau de cuisine de chef 20 cm",
            "Couteau de chef en acier inoxydable forgé pour trancher, émincer et hacher.",
        ),
    },
    "deshedding": {
        "en": (
            "De-shedding Brush for Dogs and Cats",
            "Grooming tool that removes loose undercoat hair from pets.",
        ),
        "es": (
            "Cepillo deslanador para perros y gatos",
            "Herramienta de aseo que elimina el pelo muerto de la subcapa de las mascotas.",
        ),
        "pt": (
            "Escova para remover pelos de cães e gatos",
            "Ferramenta de tosa que remove os pelos soltos do subpelo dos animais.",
        ),
        "it": (
            "Spazzola antimuta per cani e gatti",
            "Strumento di toelettatura che rimuove il pelo morto del sottopelo degli animali.",
        ),
        "fr": (
            "Brosse anti-mue pour chiens et chats",
            "Outil de toilettage qui retire les poils morts du sous-poil des animaux.",
        ),
    },
    "running_shoes": {
        "en": (
            "Lightweight Running Shoes",
            "Breathable mesh trainers with a cushioned sole for road running.",
        ),
        "es": (
            "Zapatillas de running ligeras",
            "Zapatillas de malla transpirable con suela amortiguada para correr en asfalto.",
        ),
        "pt": (
            "Tênis de corrida leves",
            "Tênis de malha respirável com sola amortecida para corrida de rua.",
        ),
        "it": (
            "Scarpe da corsa leggere",
            "Scarpe in rete traspirante con suola ammortizzata per la corsa su strada.",
        ),
        "fr": (
            "Chaussures de course légères",
            "Baskets en mesh respirant avec semelle amortie pour la course sur route.",
        ),
    },
    "espresso": {
        "en": (
            "Espresso Coffee Machine",
            "Pump espresso maker with milk frother, 15 bar, for two cups at once.",
        ),
        "es": (
            "Cafetera espresso",
            "Máquina de café espresso de bomba con espumador de leche, 15 bar, para dos tazas.",
        ),
        "pt": (
            "Máquina de café espresso",
            "Cafeteira espresso de bomba com vaporizador de leite, 15 bar, para duas xícaras.",
        ),
        "it": (
            "Macchina da caffè espresso",
            "Macchina espresso a pompa con montalatte, 15 bar, per due tazzine insieme.",
        ),
        "fr": (
            "Machine à café expresso",
            "Cafetière expresso à pompe avec buse vapeur, 15 bars, pour deux tasses à la fois.",
        ),
    },
    "frying_pan": {
        "en": (
            "Cast Iron Frying Pan 28 cm",
            "Pre-seasoned cast iron skillet for searing, frying and oven baking.",
        ),
        "es": (
            "Sartén de hierro fundido 28 cm",
            "Sartén de hierro colado curada para sellar, freír y hornear.",
        ),
        "pt": (
            "Frigideira de ferro fundido 28 cm",
            "Frigideira de ferro fundido pré-curada para selar, fritar e assar no forno.",
        ),
        "it": (
            "Padella in ghisa 28 cm",
            "Padella in ghisa pre-stagionata per rosolare, friggere e cuocere in forno.",
        ),
        "fr": (
            "Poêle en fonte 28 cm",
            "Poêle en fonte déjà culottée pour saisir, frire et cuire au four.",
        ),
    },
    "yoga_mat": {
        "en": (
            "Non-slip Yoga Mat",
            "6 mm thick exercise mat with a carrying strap, for yoga and pilates.",
        ),
        "es": (
            "Esterilla de yoga antideslizante",
            "Colchoneta de ejercicio de 6 mm con correa de transporte, para yoga y pilates.",
        ),
        "pt": (
            "Tapete de yoga antiderrapante",
            "Tapete de exercícios de 6 mm com alça de transporte, para yoga e pilates.",
        ),
        "it": (
            "Tappetino da yoga antiscivolo",
            "Materassino da 6 mm con cinghia per il trasporto, per yoga e pilates.",
        ),
        "fr": (
            "Tapis de yoga antidérapant",
            "Tapis d'exercice de 6 mm avec sangle de transport, pour le yoga et le pilates.",
        ),
    },
    "backpack": {
        "en": (
            "Hiking Backpack 40 L",
            "Waterproof trekking backpack with a rain cover and hip belt.",
        ),
        "es": (
            "Mochila de senderismo 40 L",
            "Mochila de trekking impermeable con funda para la lluvia y cinturón lumbar.",
        ),
        "pt": (
            "Mochila de trilha 40 L",
            "Mochila de trekking impermeável com capa de chuva e cinto abdominal.",
        ),
        "it": (
            "Zaino da trekking 40 L",
            "Zaino da escursionismo impermeabile con coprizaino antipioggia e cintura.",
        ),
        "fr": (
            "Sac à dos de randonnée 40 L",
            "Sac de trekking imperméable avec housse de pluie et ceinture ventrale.",
        ),
    },
    "desk_lamp": {
        "en": ("LED Desk Lamp", "Dimmable desk light with adjustable arm and USB charging port."),
        "es": (
            "Lámpara de escritorio LED",
            "Flexo regulable con brazo ajustable y puerto de carga USB.",
        ),
        "pt": (
            "Luminária de mesa LED",
            "Luminária com regulagem de intensidade, braço ajustável e porta USB.",
        ),
        "it": (
            "Lampada da scrivania LED",
            "Lampada dimmerabile con braccio regolabile e porta di ricarica USB.",
        ),
        "fr": (
            "Lampe de bureau LED",
            "Lampe à intensité variable avec bras orientable et port de charge USB.",
        ),
    },
    "speaker": {
        "en": (
            "Portable Bluetooth Speaker",
            "Waterproof speaker with deep bass and 12 hours of playback.",
        ),
        "es": (
            "Altavoz Bluetooth portátil",
            "Altavoz resistente al agua con graves profundos y 12 horas de reproducción.",
        ),
        "pt": (
            "Caixa de som Bluetooth portátil",
            "Caixa de som à prova d'água com graves potentes e 12 horas de reprodução.",
        ),
        "it": (
            "Altoparlante Bluetooth portatile",
            "Cassa impermeabile con bassi profondi e 12 ore di riproduzione.",
        ),
        "fr": (
            "Enceinte Bluetooth portable",
            "Enceinte étanche aux basses profondes, 12 heures de lecture.",
        ),
    },
    "hair_dryer": {
        "en": (
            "Ionic Hair Dryer 2200 W",
            "Hair dryer with diffuser, concentrator nozzle and cool shot button.",
        ),
        "es": (
            "Secador de pelo iónico 2200 W",
            "Secador de pelo con difusor, boquilla concentradora y botón de aire frío.",
        ),
        "pt": (
            "Secador de cabelo iônico 2200 W",
            "Secador de cabelo com difusor, bico concentrador e botão de ar frio.",
        ),
        "it": (
            "Asciugacapelli ionico 2200 W",
            "Phon con diffusore, beccuccio concentratore e tasto aria fredda.",
        ),
        "fr": (
            "Sèche-cheveux ionique 2200 W",
            "Sèche-cheveux avec diffuseur, concentrateur et touche air froid.",
        ),
    },
    "smartwatch": {
        "en": (
            "Smartwatch with Heart Rate Monitor",
            "Fitness watch with GPS, sleep tracking and phone notifications.",
        ),
        "es": (
            "Reloj inteligente con pulsómetro",
            "Reloj deportivo con GPS, control del sueño y notificaciones del móvil.",
        ),
        "pt": (
            "Relógio inteligente com monitor cardíaco",
            "Relógio fitness com GPS, monitoramento do sono e notificações do celular.",
        ),
        "it": (
            "Smartwatch con cardiofrequenzimetro",
            "Orologio sportivo con GPS, monitoraggio del sonno e notifiche dello smartphone.",
        ),
        "fr": (
            "Montre connectée avec cardiofréquencemètre",
            "Montre de sport avec GPS, suivi du sommeil et notifications du téléphone.",
        ),
    },
    "sunglasses": {
        "en": (
            "Polarized Sunglasses",
            "Sunglasses with UV400 polarized lenses and a lightweight frame.",
        ),
        "es": (
            "Gafas de sol polarizadas",
            "Gafas de sol con lentes polarizadas UV400 y montura ligera.",
        ),
        "pt": (
            "Óculos de sol polarizados",
            "Óculos de sol com lentes polarizadas UV400 e armação leve.",
        ),
        "it": (
            "Occhiali da sole polarizzati",
            "Occhiali da sole con lenti polarizzate UV400 e montatura leggera.",
        ),
        "fr": (
            "Lunettes de soleil polarisées",
            "Lunettes de soleil à verres polarisés UV400 et monture légère.",
        ),
    },
    "office_chair": {
        "en": (
            "Ergonomic Office Chair",
            "Desk chair with lumbar support, adjustable armrests and mesh back.",
        ),
        "es": (
            "Silla de oficina ergonómica",
            "Silla de escritorio con soporte lumbar, reposabrazos ajustables y respaldo de malla.",
        ),
        "pt": (
            "Cadeira de escritório ergonômica",
            "Cadeira com apoio lombar, braços ajustáveis e encosto de tela.",
        ),
        "it": (
            "Sedia da ufficio ergonomica",
            "Sedia da scrivania con supporto lombare, braccioli regolabili e schienale in rete.",
        ),
        "fr": (
            "Chaise de bureau ergonomique",
            "Siège de bureau avec soutien lombaire, accoudoirs réglables et dossier en mesh.",
        ),
    },
    "bed_sheets": {
        "en": (
            "Cotton Bed Sheet Set",
            "Percale sheets in 100% cotton: fitted sheet, flat sheet and two pillowcases.",
        ),
        "es": (
            "Juego de sábanas de algodón",
            "Sábanas de percal 100% algodón: bajera, encimera y dos fundas de almohada.",
        ),
        "pt": (
            "Jogo de lençóis de algodão",
            "Lençóis de percal 100% algodão: lençol com elástico, lençol de cima e duas fronhas.",
        ),
        "it": (
            "Set di lenzuola in cotone",
            "Lenzuola in percalle 100% cotone: lenzuolo con angoli, lenzuolo sopra e due federe.",
        ),
        "fr": (
            "Parure de draps en coton",
            "Draps en percale 100 % coton : drap-housse, drap plat et deux taies d'oreiller.",
        ),
    },
    "water_bottle": {
        "en": (
            "Insulated Stainless Steel Water Bottle 750 ml",
            "Keeps drinks cold for 24 hours or hot for 12 hours.",
        ),
        "es": (
            "Botella de agua térmica de acero inoxidable 750 ml",
            "Mantiene las bebidas frías 24 horas o calientes 12 horas.",
        ),
        "pt": (
            "Garrafa de água térmica de aço inoxidável 750 ml",
            "Mantém as bebidas geladas por 24 horas ou quentes por 12 horas.",
        ),
        "it": (
            "Borraccia termica in acciaio inox 750 ml",
            "Mantiene le bevande fredde per 24 ore o calde per 12 ore.",
        ),
        "fr": (
            "Gourde isotherme en acier inoxydable 750 ml",
            "Garde les boissons froides 24 heures ou chaudes 12 heures.",
        ),
    },
    "cutting_board": {
        "en": (
            "Bamboo Cutting Board",
            "Large chopping board with a juice groove, for the kitchen.",
        ),
        "es": (
            "Tabla de cortar de bambú",
            "Tabla de picar grande con canal para jugos, para la cocina.",
        ),
        "pt": ("Tábua de corte de bambu", "Tábua de cozinha grande com canaleta para líquidos."),
        "it": (
            "Tagliere in bambù",
            "Tagliere grande con scanalatura raccogli succhi, per la cucina.",
        ),
        "fr": ("Planche à découper en bambou", "Grande planche de cuisine avec rainure à jus."),
    },
    "umbrella": {
        "en": (
            "Windproof Travel Umbrella",
            "Compact folding umbrella with automatic open and close.",
        ),
        "es": (
            "Paraguas de viaje antiviento",
            "Paraguas plegable compacto con apertura y cierre automáticos.",
        ),
        "pt": (
            "Guarda-chuva de viagem resistente ao vento",
            "Guarda-chuva dobrável compacto com abertura e fechamento automáticos.",
        ),
        "it": (
            "Ombrello da viaggio antivento",
            "Ombrello pieghevole compatto con apertura e chiusura automatiche.",
        ),
        "fr": (
            "Parapluie de voyage anti-tempête",
            "Parapluie pliant compact à ouverture et fermeture automatiques.",
        ),
    },
    "drill": {
        "en": (
            "Cordless Drill Driver 18 V",
            "Battery drill with two speeds, 13 mm chuck and two batteries.",
        ),
        "es": (
            "Taladro atornillador inalámbrico 18 V",
            "Taladro a batería con dos velocidades, portabrocas de 13 mm y dos baterías.",
        ),
        "pt": (
            "Furadeira parafusadeira sem fio 18 V",
            "Furadeira a bateria com duas velocidades, mandril de 13 mm e duas baterias.",
        ),
        "it": (
            "Trapano avvitatore a batteria 18 V",
            "Trapano senza fili con due velocità, mandrino da 13 mm e due batterie.",
        ),
        "fr": (
            "Perceuse-visseuse sans fil 18 V",
            "Perceuse sur batterie, deux vitesses, mandrin de 13 mm et deux batteries.",
        ),
    },
    "kids_bike": {
        "en": (
            "Kids' Bicycle 16 inch",
            "Children's bike with training wheels and a bell, for ages 4 to 6.",
        ),
        "es": (
            "Bicicleta infantil de 16 pulgadas",
            "Bici para niños con ruedines y timbre, de 4 a 6 años.",
        ),
        "pt": (
            "Bicicleta infantil aro 16",
            "Bicicleta para crianças com rodinhas e campainha, de 4 a 6 anos.",
        ),
        "it": (
            "Bicicletta per bambini 16 pollici",
            "Bici per bambini con rotelle e campanello, dai 4 ai 6 anni.",
        ),
        "fr": (
            "Vélo enfant 16 pouces",
            "Vélo pour enfants avec petites roues et sonnette, de 4 à 6 ans.",
        ),
    },
    "down_jacket": {
        "en": ("Men's Down Winter Jacket", "Warm hooded puffer coat filled with duck down."),
        "es": (
            "Chaqueta de plumas de invierno para hombre",
            "Abrigo acolchado cálido con capucha, relleno de plumón de pato.",
        ),
        "pt": (
            "Jaqueta de penas de inverno masculina",
            "Casaco acolchoado quente com capuz, enchimento de penas de pato.",
        ),
        "it": (
            "Piumino invernale da uomo",
            "Giacca imbottita calda con cappuccio, imbottitura in piuma d'anatra.",
        ),
        "fr": (
            "Doudoune d'hiver pour homme",
            "Manteau matelassé chaud à capuche, garni de duvet de canard.",
        ),
    },
    "wool_socks": {
        "en": ("Merino Wool Socks, 3 pairs", "Warm hiking socks with cushioned soles."),
        "es": (
            "Calcetines de lana merino, 3 pares",
            "Calcetines cálidos de montaña con planta acolchada.",
        ),
        "pt": ("Meias de lã merino, 3 pares", "Meias quentes para trilha com sola acolchoada."),
        "it": (
            "Calze in lana merino, 3 paia",
            "Calze calde da escursionismo con soletta imbottita.",
        ),
        "fr": (
            "Chaussettes en laine mérinos, 3 paires",
            "Chaussettes chaudes de randonnée à semelle rembourrée.",
        ),
    },
    "kettle": {
        "en": (
            "Electric Kettle 1.7 L",
            "Fast boiling water kettle with auto shut-off and a glass body.",
        ),
        "es": (
            "Hervidor de agua eléctrico 1,7 L",
            "Hervidor rápido con apagado automático y cuerpo de vidrio.",
        ),
        "pt": (
            "Chaleira elétrica 1,7 L",
            "Chaleira de fervura rápida com desligamento automático e corpo de vidro.",
        ),
        "it": (
            "Bollitore elettrico 1,7 L",
            "Bollitore rapido con spegnimento automatico e corpo in vetro.",
        ),
        "fr": (
            "Bouilloire électrique 1,7 L",
            "Bouilloire rapide avec arrêt automatique et corps en verre.",
        ),
    },
}

# language -> (query, the skus that answer it)
QUERIES: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {
    "en": (
        ("wireless earphones", frozenset({"headphones"})),
        ("knife for the kitchen", frozenset({"knife"})),
        ("electric toothbrushes", frozenset({"toothbrush"})),
        ("brush to remove dog hair", frozenset({"deshedding"})),
        ("shoes for jogging", frozenset({"running_shoes"})),
        ("coffee maker", frozenset({"espresso"})),
        ("skillet", frozenset({"frying_pan"})),
        ("lamp for my desk", frozenset({"desk_lamp"})),
        ("thermal bottle", frozenset({"water_bottle"})),
        ("chair for the office", frozenset({"office_chair"})),
        ("warm coat for winter", frozenset({"down_jacket"})),
        ("battery powered drill", frozenset({"drill"})),
    ),
    "es": (
        ("auriculares inalámbricos", frozenset({"headphones"})),
        ("cuchillo de cocina", frozenset({"knife"})),
        ("cepillos de dientes eléctricos", frozenset({"toothbrush"})),
        ("cepillo para quitar el pelo del perro", frozenset({"deshedding"})),
        ("zapatillas para correr", frozenset({"running_shoes"})),
        ("máquina de café", frozenset({"espresso"})),
        ("sartenes", frozenset({"frying_pan"})),
        ("lámpara para el escritorio", frozenset({"desk_lamp"})),
        ("botella térmica", frozenset({"water_bottle"})),
        ("silla para la oficina", frozenset({"office_chair"})),
        ("abrigo de invierno", frozenset({"down_jacket"})),
        ("taladro de batería", frozenset({"drill"})),
    ),
    "pt": (
        ("fones de ouvido sem fio", frozenset({"headphones"})),
        ("faca para cozinha", frozenset({"knife"})),
        ("escovas de dentes elétricas", frozenset({"toothbrush"})),
        ("escova para tirar pelo de cachorro", frozenset({"deshedding"})),
        ("tênis para correr", frozenset({"running_shoes"})),
        ("cafeteira", frozenset({"espresso"})),
        ("frigideiras", frozenset({"frying_pan"})),
        ("luminária para escrivaninha", frozenset({"desk_lamp"})),
        ("garrafa térmica", frozenset({"water_bottle"})),
        ("cadeira para escritório", frozenset({"office_chair"})),
        ("casaco de inverno", frozenset({"down_jacket"})),
        ("furadeira a bateria", frozenset({"drill"})),
    ),
    "it": (
        ("cuffie senza fili", frozenset({"headphones"})),
        ("coltello per la cucina", frozenset({"knife"})),
        ("spazzolini elettrici", frozenset({"toothbrush"})),
        ("spazzola per il pelo del cane", frozenset({"deshedding"})),
        ("scarpe per correre", frozenset({"running_shoes"})),
        ("macchinetta del caffè", frozenset({"espresso"})),
        ("padelle", frozenset({"frying_pan"})),
        ("lampada per la scrivania", frozenset({"desk_lamp"})),
        ("bottiglia termica", frozenset({"water_bottle"})),
        ("sedia per l'ufficio", frozenset({"office_chair"})),
        ("giaccone invernale", frozenset({"down_jacket"})),
        ("trapano senza fili", frozenset({"drill"})),
    ),
    "fr": (
        ("écouteurs sans fil", frozenset({"headphones"})),
        ("couteau pour la cuisine", frozenset({"knife"})),
        ("brosses à dents électriques", frozenset({"toothbrush"})),
        ("brosse pour les poils du chien", frozenset({"deshedding"})),
        ("chaussures pour courir", frozenset({"running_shoes"})),
        ("cafetière", frozenset({"espresso"})),
        ("poêles", frozenset({"frying_pan"})),
        ("lampe pour le bureau", frozenset({"desk_lamp"})),
        ("bouteille isotherme", frozenset({"water_bottle"})),
        ("chaise pour le bureau", frozenset({"office_chair"})),
        ("manteau d'hiver", frozenset({"down_jacket"})),
        ("perceuse à batterie", frozenset({"drill"})),
    ),
}
