package platform.esnode;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.elasticsearch.Build;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.node.ClasspathPluginsNode;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.ClasspathPluginsService.ClasspathPlugin;
import org.elasticsearch.transport.netty4.Netty4Plugin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Runs one Elasticsearch node in the foreground on loopback, the Netty4 HTTP/transport plugin
 * {@link RootInfoPlugin} and {@link LanguageAnalysisPlugin} loaded from the class path.
 *
 * <pre>
 * java -cp target/classes:target/lib/* platform.esnode.EsNodeLauncher \
 *     --http-port 9200 --home /tmp/es [--data DIR] [--logs DIR] [--cluster-name NAME]
 *     [--node-name NAME] [--transport-port PORT]
 *     [--seed-hosts 127.0.0.1:9301,127.0.0.1:9302 --initial-master-nodes a,b,c]
 *     [-E setting=value ...]
 * </pre>
 *
 * <p>Discovery: without {@code --seed-hosts} the node is a one-node cluster
 * ({@code discovery.type=single-node}). With it, the node joins a multi-node cluster: it finds
 * the others at the seed transport addresses, and {@code --initial-master-nodes} (the node names
 * of every master-eligible node) is used for the cluster's very first election only. A node
 * whose data path already holds a cluster state has bootstrapped before; the setting is then
 * left out, as Elasticsearch asks (a second bootstrap could form a new, empty cluster).
 *
 * Each option may also be given as a system property ({@code -Desnode.http-port=9200}, ...); a
 * command-line option wins. {@code -E} settings are applied last and override everything.
 *
 * <p>What this launcher deliberately does not do, compared with {@code bin/elasticsearch}:
 * <ul>
 *   <li>No entitlements: the distribution loads an instrumentation agent that confines each plugin
 *       to the file, network and process rights of its policy. That needs the distribution's
 *       module layout and agent jar; this embedded node runs everything in one unnamed module,
 *       trusted like any library.</li>
 *   <li>No native bootstrap: no seccomp exec sandbox, no mlockall, and no refusal to run as root
 *       (the machines this runs on are root-only containers).</li>
 *   <li>No bootstrap checks (heap, file descriptors, max map count ...): the node binds only to
 *       loopback, where Elasticsearch itself treats them as warnings.</li>
 *   <li>No jar-hell check and no keystore (no secure settings).</li>
 * </ul>
 */
public final class EsNodeLauncher {

    private static final String PROPERTY_PREFIX = "esnode.";
    private static final List<String> OPTIONS = List.of(
        "http-port",
        "home",
        "data",
        "logs",
        "cluster-name",
        "node-name",
        "transport-port",
        "seed-hosts",
        "initial-master-nodes"
    );

    private EsNodeLauncher() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable failure) {
            // The whole trace, then a one-line cause as the very last line of the output, where
            // a supervisor showing the tail of the log will find it.
            failure.printStackTrace();
            Throwable root = failure;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            System.err.println("es-node failed to start: " + root);
            System.err.flush();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        // The node's own shutdown hook (below) logs while it closes; log4j's hook must not stop
        // logging first. bin/elasticsearch sets the same property in its JVM options.
        System.setProperty("log4j.shutdownHookEnabled", "false");
        // Netty settings from the distribution's default JVM options: no sun.misc.Unsafe (also
        // keeps JDK 24+ from warning about it), no selector key-set hack, no object recycler.
        setDefaultProperty("io.netty.noUnsafe", "true");
        setDefaultProperty("io.netty.noKeySetOptimization", "true");
        setDefaultProperty("io.netty.recycler.maxCapacityPerThread", "0");
        Map<String, String> options = new LinkedHashMap<>();
        Map<String, String> overrides = new LinkedHashMap<>();
        parseArgs(args, options, overrides);

        int httpPort = Integer.parseInt(option(options, "http-port", "9200"));
        Path home = Path.of(option(options, "home", "es-home")).toAbsolutePath().normalize();
        Path data = Path.of(option(options, "data", home.resolve("data").toString())).toAbsolutePath().normalize();
        Path logs = Path.of(option(options, "logs", home.resolve("logs").toString())).toAbsolutePath().normalize();
        String clusterName = option(options, "cluster-name", "platform-es");
        String nodeName = option(options, "node-name", "es-node-" + httpPort);
        String transportPort = option(options, "transport-port", "9300-9400");
        List<String> seedHosts = listOption(options, "seed-hosts");
        List<String> initialMasters = listOption(options, "initial-master-nodes");
        if (seedHosts.isEmpty() && initialMasters.isEmpty() == false) {
            throw new IllegalArgumentException("--initial-master-nodes needs --seed-hosts (cluster mode)");
        }

        Path config = home.resolve("config");
        Files.createDirectories(config);
        Files.createDirectories(data);
        Files.createDirectories(logs);
        writeLoggingConfig(config);
        prepareNativeLibraries(home.resolve("native"));

        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", data.toString())
            .put("path.logs", logs.toString())
            .put("cluster.name", clusterName)
            .put("node.name", nodeName)
            .put(discovery(seedHosts, initialMasters, data))
            .put("network.host", "127.0.0.1")
            .put("http.port", httpPort)
            .put("transport.port", transportPort)
            // A nearly full disk must not push shards away or put indices into read-only mode:
            // the disk-threshold allocation decider is off, and the watermarks are relaxed in
            // case someone turns it back on.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("cluster.routing.allocation.disk.watermark.low", "97%")
            .put("cluster.routing.allocation.disk.watermark.high", "98%")
            .put("cluster.routing.allocation.disk.watermark.flood_stage", "99%")
            .put(Settings.builder().loadFromMap(overrides).build())
            .build();

        Environment environment = new Environment(settings, config);
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(nodeName);
        LogConfigurator.setClusterName(clusterName);
        LogConfigurator.configure(environment, true);
        Logger logger = LogManager.getLogger(EsNodeLauncher.class);
        checkLucene();

        long startedAt = System.nanoTime();
        Node node = new ClasspathPluginsNode(
            environment,
            List.of(
                new ClasspathPlugin("transport-netty4", Netty4Plugin.class),
                new ClasspathPlugin(RootInfoPlugin.NAME, RootInfoPlugin.class),
                new ClasspathPlugin(LanguageAnalysisPlugin.NAME, LanguageAnalysisPlugin.class)
            )
        );
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> shutdown(node, logger, stopped), "es-node-shutdown"));
        node.start();
        logger.info(
            "es-node {} (lucene {}) ready on http://127.0.0.1:{} in {} ms, data [{}]",
            Build.current().qualifiedVersion(),
            IndexVersion.current().luceneVersion(),
            httpPort,
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedAt),
            data
        );
        // The node's threads are daemons or pools; keep the JVM alive until a signal arrives.
        stopped.await();
    }

    /**
     * Single-node discovery without seed hosts; else the seeds, plus the initial master nodes
     * unless this node's data path shows it has already been part of a cluster.
     */
    private static Settings discovery(List<String> seedHosts, List<String> initialMasters, Path data) throws IOException {
        if (seedHosts.isEmpty()) {
            return Settings.builder().put("discovery.type", "single-node").build();
        }
        Settings.Builder builder = Settings.builder().putList("discovery.seed_hosts", seedHosts);
        if (initialMasters.isEmpty() == false && hasClusterState(data) == false) {
            builder.putList("cluster.initial_master_nodes", initialMasters);
        }
        return builder.build();
    }

    /** Whether the node's persisted cluster state (a Lucene index in {@code _state/}) exists. */
    private static boolean hasClusterState(Path data) throws IOException {
        Path state = data.resolve("_state");
        if (Files.isDirectory(state) == false) {
            return false;
        }
        try (var entries = Files.list(state)) {
            return entries.anyMatch(path -> path.getFileName().toString().startsWith("segments_"));
        }
    }

    private static void shutdown(Node node, Logger logger, CountDownLatch stopped) {
        try {
            logger.info("stopping es-node");
            node.prepareForClose();
            node.close();
            if (node.awaitClose(20, TimeUnit.SECONDS) == false) {
                logger.warn("node did not stop within 20 seconds");
            }
        } catch (IOException | RuntimeException e) {
            logger.error("failure while stopping the node", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            stopped.countDown();
            Configurator.shutdown((LoggerContext) LogManager.getContext(false));
        }
    }

    private static final List<String> SYSTEM_ZSTD = List.of(
        "/usr/lib/x86_64-linux-gnu/libzstd.so.1",
        "/lib/x86_64-linux-gnu/libzstd.so.1",
        "/usr/lib/aarch64-linux-gnu/libzstd.so.1",
        "/lib/aarch64-linux-gnu/libzstd.so.1",
        "/usr/lib64/libzstd.so.1",
        "/usr/lib/libzstd.so.1"
    );

    /**
     * Elasticsearch's native access (posix calls through the FFM API: rlimits, statfs, fallocate
     * ...) only comes up if it can load {@code libzstd} from {@code es.nativelibs.path}; the
     * distribution ships that library in {@code lib/platform/<os-arch>/}, Maven Central does not.
     * The operating system's libzstd (1.5.x) serves instead, through a symlink. ES's own SIMD
     * vector library ({@code libvec}) exists only in the distribution, so it is switched off and
     * Lucene's Panama vector code is used. Without any libzstd the node still runs, with native
     * methods disabled (logged as a warning).
     */
    private static void prepareNativeLibraries(Path dir) throws IOException {
        setDefaultProperty("org.elasticsearch.nativeaccess.enableVectorLibrary", "false");
        if (System.getProperty("es.nativelibs.path") != null) {
            return;
        }
        Files.createDirectories(dir);
        Path link = dir.resolve(System.mapLibraryName("zstd"));
        for (String candidate : SYSTEM_ZSTD) {
            Path library = Path.of(candidate);
            if (Files.isReadable(library)) {
                Files.deleteIfExists(link);
                Files.createSymbolicLink(link, library);
                break;
            }
        }
        System.setProperty("es.nativelibs.path", dir.toString());
    }

    private static void setDefaultProperty(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    private static void checkLucene() {
        if (IndexVersion.current().luceneVersion().equals(org.apache.lucene.util.Version.LATEST) == false) {
            throw new IllegalStateException(
                "Lucene on the class path is " + org.apache.lucene.util.Version.LATEST
                    + " but Elasticsearch needs " + IndexVersion.current().luceneVersion()
            );
        }
    }

    /** Console-only logging: the supervising process captures stdout into its own log file. */
    private static void writeLoggingConfig(Path config) throws IOException {
        String properties = """
            status = error
            appender.console.type = Console
            appender.console.name = console
            appender.console.layout.type = PatternLayout
            appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
            rootLogger.level = info
            rootLogger.appenderRef.console.ref = console
            logger.deprecation.name = org.elasticsearch.deprecation
            logger.deprecation.level = warn
            """;
        Files.writeString(config.resolve("log4j2.properties"), properties, StandardCharsets.UTF_8);
    }

    private static String option(Map<String, String> options, String name, String fallback) {
        String value = options.get(name);
        if (value == null) {
            value = System.getProperty(PROPERTY_PREFIX + name);
        }
        return value == null || value.isBlank() ? fallback : value;
    }

    private static List<String> listOption(Map<String, String> options, String name) {
        return Arrays.stream(option(options, name, "").split(","))
            .map(String::strip)
            .filter(part -> part.isEmpty() == false)
            .toList();
    }

    private static void parseArgs(String[] args, Map<String, String> options, Map<String, String> overrides) {
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.startsWith("-E")) {
                String setting = arg.equals("-E") ? requireValue(args, ++i, arg) : arg.substring(2);
                int eq = setting.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("expected -E setting=value, got: " + setting);
                }
                overrides.put(setting.substring(0, eq), setting.substring(eq + 1));
            } else if (arg.startsWith("--")) {
                int eq = arg.indexOf('=');
                String name = eq > 0 ? arg.substring(2, eq) : arg.substring(2);
                if (OPTIONS.contains(name) == false) {
                    throw new IllegalArgumentException("unknown option --" + name + "; known: " + OPTIONS);
                }
                options.put(name, eq > 0 ? arg.substring(eq + 1) : requireValue(args, ++i, arg));
            } else {
                throw new IllegalArgumentException("unexpected argument: " + arg);
            }
        }
    }

    private static String requireValue(String[] args, int index, String option) {
        if (index >= args.length) {
            throw new IllegalArgumentException("missing value after " + option);
        }
        return args[index];
    }
}
