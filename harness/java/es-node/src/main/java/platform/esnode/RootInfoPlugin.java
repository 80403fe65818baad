package platform.esnode;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Answers {@code GET /} and {@code HEAD /} with the node, cluster and version summary that
 * Elasticsearch's {@code rest-root} module returns. That module is not published to Maven Central,
 * and the official clients call {@code GET /} for {@code info()} and {@code HEAD /} for
 * {@code ping()}.
 */
public final class RootInfoPlugin extends Plugin implements ActionPlugin {

    static final String NAME = "platform-root-info";

    private final AtomicReference<ClusterService> clusterService = new AtomicReference<>();

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService.set(services.clusterService());
        return List.of();
    }

    @Override
    public Collection<RestHandler> getRestHandlers(
        RestHandlersServices services,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RootInfoHandler(clusterService::get));
    }

    static final class RootInfoHandler extends BaseRestHandler {

        private final Supplier<ClusterService> clusterService;

        RootInfoHandler(Supplier<ClusterService> clusterService) {
            this.clusterService = clusterService;
        }

        @Override
        public String getName() {
            return "platform_root_info_action";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        public boolean canTripCircuitBreaker() {
            return false;
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            boolean pretty = request.hasParam("pretty") == false; // pretty by default, like rest-root
            return channel -> {
                XContentBuilder builder = channel.newBuilder();
                if (pretty) {
                    builder.prettyPrint().lfAtEnd();
                }
                writeInfo(builder, clusterService.get());
                channel.sendResponse(new RestResponse(RestStatus.OK, builder));
            };
        }

        private static void writeInfo(XContentBuilder builder, ClusterService clusterService) throws IOException {
            Build build = Build.current();
            ClusterState state = clusterService.state();
            builder.startObject();
            builder.field("name", clusterService.getNodeName());
            builder.field("cluster_name", clusterService.getClusterName().value());
            builder.field("cluster_uuid", state.metadata().clusterUUID());
            builder.startObject("version");
            builder.field("number", build.qualifiedVersion());
            builder.field("build_flavor", "default");
            builder.field("build_type", build.type().displayName());
            builder.field("build_hash", build.hash());
            builder.field("build_date", build.date());
            builder.field("build_snapshot", build.isSnapshot());
            builder.field("lucene_version", IndexVersion.current().luceneVersion().toString());
            builder.field("minimum_wire_compatibility_version", build.minWireCompatVersion());
            builder.field("minimum_index_compatibility_version", build.minIndexCompatVersion());
            builder.endObject();
            builder.field("tagline", "You Know, for Search");
            builder.endObject();
        }
    }
}
