package org.elasticsearch.node;

import org.elasticsearch.env.Environment;
import org.elasticsearch.plugins.ClasspathPluginsService;
import org.elasticsearch.plugins.ClasspathPluginsService.ClasspathPlugin;
import org.elasticsearch.plugins.PluginsLoader;
import org.elasticsearch.plugins.PluginsService;

import java.util.List;

/**
 * An Elasticsearch {@link Node} whose plugins are classes on the JVM class path.
 *
 * <p>This class is part of the platform's es-node launcher, not of Elasticsearch. A node is built
 * by {@code NodeConstruction}, which asks a {@code NodeServiceProvider} for its services; both are
 * package-private, which is why this class sits in {@code org.elasticsearch.node}. The only service
 * replaced is the plugins service: everything else is the stock production implementation.
 */
public final class ClasspathPluginsNode extends Node {

    public ClasspathPluginsNode(Environment environment, List<ClasspathPlugin> plugins) {
        super(
            NodeConstruction.prepareConstruction(
                environment,
                null, // the plugins service below does not read plugin bundles from disk
                new NodeServiceProvider() {
                    @Override
                    PluginsService newPluginService(Environment env, PluginsLoader unused) {
                        return new ClasspathPluginsService(env.settings(), env, plugins);
                    }
                },
                true // forbid private index settings, as a production node does
            )
        );
    }
}
