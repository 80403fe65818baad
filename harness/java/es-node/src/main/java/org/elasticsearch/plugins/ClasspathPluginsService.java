package org.elasticsearch.plugins;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.elasticsearch.Build;
import org.elasticsearch.action.admin.cluster.node.info.PluginsAndModules;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.plugins.spi.SPIClassIterator;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A {@link PluginsService} whose plugins are classes already on the JVM class path, instead of
 * bundles unpacked under {@code modules/} and {@code plugins/} of an Elasticsearch distribution.
 *
 * <p>This class is part of the platform's es-node launcher, not of Elasticsearch. It lives in
 * Elasticsearch's {@code org.elasticsearch.plugins} package only because the record describing a
 * loaded plugin ({@code PluginsService.LoadedPlugin}) and the helpers that instantiate plugins and
 * their SPI extensions are package-private. That works because the launcher runs everything on the
 * class path (one unnamed module), where a package may be spread over several jars.
 */
public final class ClasspathPluginsService extends PluginsService {

    private static final Logger logger = LogManager.getLogger(ClasspathPluginsService.class);

    /** A plugin to load: the name it is reported under and its entry class. */
    public record ClasspathPlugin(String name, Class<? extends Plugin> pluginClass) {}

    private final List<LoadedPlugin> loaded;

    public ClasspathPluginsService(Settings settings, Environment environment, List<ClasspathPlugin> plugins) {
        // No bundles: the superclass sees an empty modules/ and plugins/ set. (The public factory
        // PluginsLoader.createPluginsLoader cannot be used: it expects the server to be a named
        // module, as in the distribution, while here it is on the class path.)
        super(settings, environment.configDir(), new PluginsLoader(Set.of(), Set.of(), Map.of()));
        List<LoadedPlugin> result = new ArrayList<>();
        for (ClasspathPlugin plugin : plugins) {
            Plugin instance = loadPlugin(plugin.pluginClass(), settings, environment.configDir());
            PluginDescriptor descriptor = describe(plugin);
            logger.info("loaded classpath plugin [{}] ({})", descriptor.getName(), plugin.pluginClass().getName());
            result.add(new LoadedPlugin(descriptor, instance, plugin.pluginClass().getClassLoader()));
        }
        loadExtensions(result);
        this.loaded = List.copyOf(result);
    }

    @Override
    protected List<LoadedPlugin> plugins() {
        return loaded;
    }

    @Override
    public PluginsAndModules info() {
        return new PluginsAndModules(
            loaded.stream().map(LoadedPlugin::descriptor).map(PluginRuntimeInfo::new).toList(),
            List.of()
        );
    }

    /**
     * All plugins share the application class loader here, so an SPI lookup through any of them
     * sees every {@code META-INF/services} file on the class path (the server's own feature
     * specifications included). The stock implementation would instantiate each provider once per
     * plugin; this one instantiates each provider class once, bound to the first plugin whose type
     * its constructor accepts.
     */
    @Override
    public <T> List<? extends T> loadServiceProviders(Class<T> service) {
        Map<Class<?>, T> providers = new LinkedHashMap<>();
        for (LoadedPlugin plugin : loaded) {
            Iterator<Class<? extends T>> classes = SPIClassIterator.get(service, plugin.instance().getClass().getClassLoader());
            while (classes.hasNext()) {
                Class<? extends T> providerClass = classes.next();
                if (providers.containsKey(providerClass) || acceptsPlugin(providerClass, plugin.instance()) == false) {
                    continue;
                }
                providers.put(providerClass, createExtension(providerClass, service, plugin.instance()));
            }
        }
        return List.copyOf(providers.values());
    }

    /** False only for a provider whose one-argument constructor wants some other plugin type. */
    private static boolean acceptsPlugin(Class<?> providerClass, Plugin plugin) {
        for (Constructor<?> constructor : providerClass.getConstructors()) {
            if (constructor.getParameterCount() == 1 && constructor.getParameterTypes()[0].isInstance(plugin) == false) {
                return false;
            }
        }
        return true;
    }

    /** The descriptor shipped inside the plugin's jar if there is one, else a synthesized one. */
    private static PluginDescriptor describe(ClasspathPlugin plugin) {
        String resource = "META-INF/es-plugins/" + plugin.name() + "/" + PluginDescriptor.INTERNAL_DESCRIPTOR_FILENAME;
        ClassLoader loader = plugin.pluginClass().getClassLoader();
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in != null) {
                return PluginDescriptor.readInternalDescriptorFromStream(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + resource, e);
        }
        return new PluginDescriptor(
            plugin.name(),
            "classpath plugin " + plugin.pluginClass().getName(),
            Build.current().version(),
            Build.current().version(),
            Integer.toString(Runtime.version().feature()),
            plugin.pluginClass().getName(),
            null,
            List.of(),
            false,
            false,
            false,
            false,
            PluginDescriptor.DeploymentTarget.ALL
        );
    }
}
