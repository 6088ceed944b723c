package dev.engram.engine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.common.settings.Settings;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.ExtensiblePlugin;
import org.opensearch.plugins.Plugin;

/**
 * Starts a single OpenSearch node whose plugins are classes on the classpath, not folders under
 * {@code plugins/}. This is the route OpenSearch's own runner projects take: the protected
 * {@link Node} constructor accepts plugin classes, and skipping {@code Bootstrap} skips the
 * root check, jar-hell and bootstrap checks that only make sense for a packaged distribution.
 *
 * Usage: {@code java -cp engine.jar:lib/* dev.engram.engine.EngineNode <opensearch.yml>}
 * Every node setting comes from that file; {@code path.home} must be set in it.
 */
public final class EngineNode extends Node {

    /** Plugin classes loaded by name, so a missing jar is reported clearly rather than as a linkage error. */
    static final String[] PLUGINS = {
        "org.opensearch.transport.Netty4Plugin",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "org.opensearch.painless.PainlessPlugin",
        "org.opensearch.index.reindex.ReindexPlugin",
        "org.opensearch.index.mapper.MapperExtrasPlugin",
        "org.opensearch.knn.plugin.KNNPlugin",
    };

    private EngineNode(Settings settings, Collection<Class<? extends Plugin>> plugins) {
        super(InternalSettingsPreparer.prepareEnvironment(settings, Collections.emptyMap(), null, () -> "engram-node"),
              plugins, true);
    }

    @SuppressWarnings("unchecked")
    static List<Class<? extends Plugin>> pluginClasses() throws ClassNotFoundException {
        List<Class<? extends Plugin>> classes = new ArrayList<>();
        for (String name : PLUGINS) {
            classes.add((Class<? extends Plugin>) Class.forName(name));
        }
        return classes;
    }

    /**
     * Plugin extensions (SPI) are only wired for plugin bundles, never for classpath plugins, so
     * painless would miss k-NN's allowlist ({@code cosineSimilarity} and friends). Painless keeps its
     * allowlists in a static map: feeding it every {@code PainlessExtension} on the classpath before
     * the node builds its script engine gives painless what a packaged distribution gives it.
     */
    static void loadPainlessExtensions() {
        new PainlessPlugin().loadExtensions(new ExtensiblePlugin.ExtensionLoader() {
            @Override
            public <T> List<T> loadExtensions(Class<T> extensionPointType) {
                List<T> found = new ArrayList<>();
                ServiceLoader.load(extensionPointType, EngineNode.class.getClassLoader()).forEach(found::add);
                return found;
            }
        });
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: EngineNode <opensearch.yml>");
            System.exit(2);
        }
        Path config = Path.of(args[0]).toAbsolutePath();
        Settings settings = Settings.builder().loadFromPath(config).build();
        if (settings.get("path.home") == null) {
            System.err.println("path.home must be set in " + config);
            System.exit(2);
        }
        Files.createDirectories(Path.of(settings.get("path.home"), "plugins"));
        Files.createDirectories(Path.of(settings.get("path.home"), "modules"));

        long started = System.nanoTime();
        loadPainlessExtensions();
        EngineNode node = new EngineNode(settings, pluginClasses());
        CountDownLatch stopped = new CountDownLatch(1);
        // SIGTERM / SIGINT: close the node so the data folder lock and translog are released cleanly.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "engram-node-shutdown"));
        node.start();
        System.out.printf("engram-engine: node started in %.1f s%n", (System.nanoTime() - started) / 1e9);
        System.out.flush();
        stopped.await();
    }
}
