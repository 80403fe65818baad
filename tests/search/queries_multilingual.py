"""The demo catalog's search-quality queries (``queries.QUERIES``) as shoppers of the
production sites' markets would type them: Spanish, Portuguese and Italian, translated by
hand for the first 24 products (a shopper's words, not word for word). The catalog stays
English: these measure a query in another language finding its product (cross-lingual),
the case where BM25 has nothing to match and only a multilingual model helps.
"""

# One query per line reads best as a table.
# ruff: noqa: E501
from __future__ import annotations

# language -> sku -> query
# fmt: off
TRANSLATED: dict[str, dict[str, str]] = {
    "es": {
        "DM-00037": "tabla de cortar de acacia con asas para servir quesos y embutidos, color mostaza",
        "DM-00049": "molinillo de café con muelas de acero y recipiente antiestático para el café de filtro de la mañana, gris oscuro",
        "DM-00061": "hervidor de agua rápido de 3kW con temperatura regulable para café de filtro, acero cepillado negro",
        "DM-00073": "olla grande de acero con cesta escurridora para pasta y tapa hermética para caldo de huesos",
        "DM-00038": "bastones de senderismo de titanio con cierre rápido regulable y puntas de carburo para las bajadas",
        "DM-00050": "linterna frontal impermeable de 900 lúmenes, verde, para tareas nocturnas alrededor de la tienda de campaña",
        "DM-00062": "hornillo de titanio ligero para mochileros con soporte plegable para la olla y regulador de llama, rojo",
        "DM-00074": "purificador de agua de fibra hueca de 0,1 micras que dura 2000 litros, para viajar al extranjero",
        "DM-00039": "tocadiscos con puerto USB para pasar vinilos a digital y preamplificador de phono integrado",
        "DM-00051": "barra de sonido Atmos para la tele con subwoofer inalámbrico y eARC para noches de cine, aluminio azul",
        "DM-00063": "pareja de altavoces de escritorio de nogal con rejillas magnéticas y graves con puerto trasero, naranja",
        "DM-00075": "conversor digital analógico de acero para alta fidelidad en el escritorio, 384kHz 32 bits, rueda de volumen física",
        "DM-00040": "pantalla IPS 4K de 27 pulgadas que carga el portátil por USB-C a 90W, para editar fotos y vídeo",
        "DM-00052": "elevador de portátil de aluminio con patas de silicona antideslizantes y parte trasera abierta ventilada, para mejorar la postura del cuello",
        "DM-00064": "disco de estado sólido portátil cifrado, 2000 MB/s, para fotógrafos que trabajan en exteriores",
        "DM-00076": "cámara web blanca con enfoque automático, tapa de privacidad y dos micrófonos con cancelación de ruido para directos",
        "DM-00041": "jarrón de gres hecho a mano, moteado mate con esmalte reactivo y cuello estrecho, para pampas secas, rosa",
        "DM-00053": "vela de cera de abeja perfumada con aceites esenciales cuya tapa sirve de posavasos, para noches de invierno acogedoras",
        "DM-00065": "alfombra de yute trenzado con flecos y base antideslizante, ideal para pisos de alquiler",
        "DM-00077": "funda de cojín de lino blanco bordada a mano, con cremallera oculta y ribete, para renovar un sofá viejo",
        "DM-00042": "base de cama tapizada en terciopelo azul con soporte central reforzado para la habitación de invitados",
        "DM-00054": "mesa de centro de mármol con tapa elevable y cajón secreto sobre patas cónicas, para noches de juegos",
        "DM-00066": "mueble de TV de nogal con gestión de cables y cajones de cierre suave para esconder el desorden",
        "DM-00078": "sillón giratorio de ratán con reposapiés y patas de nogal para un rincón del dormitorio",
    },
    "pt": {
        "DM-00037": "tábua de corte de acácia com pegas para servir queijos e enchidos, cor mostarda",
        "DM-00049": "moinho de café com mós de aço e recipiente antiestático para o café de filtro da manhã, cinzento escuro",
        "DM-00061": "chaleira elétrica rápida de 3kW com temperatura ajustável para café de filtro, aço escovado preto",
        "DM-00073": "panela grande de aço com cesto escorredor para massa e tampa bem vedada para caldo de ossos",
        "DM-00038": "bastões de caminhada de titânio com fecho rápido ajustável e pontas de carboneto para as descidas",
        "DM-00050": "lanterna de cabeça à prova de água, 900 lúmens, verde, para tarefas noturnas à volta da tenda",
        "DM-00062": "fogareiro de titânio leve para mochileiros com suporte dobrável para a panela e regulação da chama, vermelho",
        "DM-00074": "purificador de água de fibra oca de 0,1 mícron que dura 2000 litros, para viajar para o estrangeiro",
        "DM-00039": "gira-discos com porta USB para converter vinil em digital e pré-amplificador phono incorporado",
        "DM-00051": "barra de som Atmos para a televisão com subwoofer sem fios e eARC para noites de cinema, alumínio azul",
        "DM-00063": "par de colunas de secretária em nogueira com grelhas magnéticas e graves com porta traseira, laranja",
        "DM-00075": "conversor digital-analógico de aço para alta fidelidade na secretária, 384kHz 32 bits, botão de volume físico",
        "DM-00040": "ecrã IPS 4K de 27 polegadas que carrega o portátil por USB-C a 90W, para editar fotos e vídeo",
        "DM-00052": "suporte de portátil em alumínio com pés de silicone antiderrapantes e traseira aberta ventilada, melhor postura do pescoço",
        "DM-00064": "disco SSD portátil encriptado, 2000 MB/s, para fotógrafos que fotografam no terreno",
        "DM-00076": "câmara web branca com focagem automática, tampa de privacidade e dois microfones com cancelamento de ruído para transmissões ao vivo",
        "DM-00041": "jarra de grés feita à mão, salpicada e mate com vidrado reativo e gargalo estreito, para pampas secas, rosa",
        "DM-00053": "vela de cera de abelha perfumada com óleos essenciais cuja tampa serve de base para copos, para noites de inverno aconchegantes",
        "DM-00065": "tapete de juta entrançada com franjas e base antiderrapante, bom para quem arrenda casa",
        "DM-00077": "capa de almofada de linho branco bordada à mão, com fecho escondido e debrum, para renovar um sofá velho",
        "DM-00042": "estrado de cama estofado em veludo azul com apoio central reforçado para o quarto de hóspedes",
        "DM-00054": "mesa de centro de mármore com tampo elevatório e gaveta secreta sobre pernas cónicas, para noites de jogos",
        "DM-00066": "móvel de TV em nogueira com gestão de cabos e gavetas de fecho suave para esconder a confusão",
        "DM-00078": "cadeira giratória de verga com apoio para os pés e pernas de nogueira para um canto do quarto",
    },
    "it": {
        "DM-00037": "tagliere in acacia con manici per servire formaggi e salumi, color senape",
        "DM-00049": "macinacaffè con macine in acciaio e contenitore antistatico per il caffè filtro del mattino, grigio scuro",
        "DM-00061": "bollitore rapido da 3kW con temperatura regolabile per il caffè filtro, acciaio spazzolato nero",
        "DM-00073": "pentola grande in acciaio con cestello scolapasta e coperchio ermetico per il brodo di ossa",
        "DM-00038": "bastoncini da trekking in titanio con chiusura rapida regolabile e punte in carburo per le discese",
        "DM-00050": "torcia frontale impermeabile da 900 lumen, verde, per i lavori notturni intorno alla tenda",
        "DM-00062": "fornello da campeggio leggero in titanio con supporto pieghevole per la pentola e regolazione della fiamma, rosso",
        "DM-00074": "depuratore d'acqua a fibra cava da 0,1 micron che dura 2000 litri, per viaggiare all'estero",
        "DM-00039": "giradischi con porta USB per convertire i vinili in digitale e preamplificatore phono integrato",
        "DM-00051": "soundbar Atmos per la TV con subwoofer senza fili ed eARC per le serate film, alluminio blu",
        "DM-00063": "coppia di casse da scrivania in noce con griglie magnetiche e bassi con porta posteriore, arancione",
        "DM-00075": "convertitore digitale analogico in acciaio per l'hi-fi sulla scrivania, 384kHz 32 bit, manopola del volume fisica",
        "DM-00040": "monitor IPS 4K da 27 pollici che ricarica il portatile via USB-C a 90W, per il fotoritocco e il montaggio video",
        "DM-00052": "supporto per portatile in alluminio con piedini in silicone antiscivolo e retro aperto ventilato, per la postura del collo",
        "DM-00064": "SSD portatile crittografato, 2000 MB/s, per fotografi che scattano sul campo",
        "DM-00076": "webcam bianca con messa a fuoco automatica, copriobiettivo per la privacy e due microfoni con riduzione del rumore per le dirette",
        "DM-00041": "vaso in gres fatto a mano, puntinato opaco con smalto reattivo e collo sottile, per la pampas secca, rosa",
        "DM-00053": "candela di cera d'api profumata agli oli essenziali con coperchio che fa da sottobicchiere, per le serate invernali",
        "DM-00065": "tappeto in iuta intrecciata con frange e fondo antiscivolo, adatto a chi vive in affitto",
        "DM-00077": "federa per cuscino in lino bianco ricamata a mano, con cerniera nascosta e profilo, per rinnovare un vecchio divano",
        "DM-00042": "base letto imbottita in velluto blu con supporto centrale rinforzato per la camera degli ospiti",
        "DM-00054": "tavolino da salotto in marmo con piano sollevabile e cassetto segreto su gambe affusolate, per le serate di giochi",
        "DM-00066": "mobile TV in noce con passacavi e cassetti a chiusura ammortizzata per nascondere il disordine",
        "DM-00078": "poltrona girevole in rattan con poggiapiedi e gambe in noce per un angolo della camera da letto",
    },
}
# fmt: on
