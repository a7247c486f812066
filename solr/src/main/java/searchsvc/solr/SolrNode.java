package searchsvc.solr;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Properties;
import org.apache.solr.embedded.JettyConfig;
import org.apache.solr.embedded.JettySolrRunner;

/**
 * One SolrCloud node in its own JVM, for the local cluster of `searchsvc solr start` and the tests.
 *
 * <p>Solr 9 ships no runnable server in Maven Central, only the test framework's JettySolrRunner;
 * this wraps it with a command line, a solr.xml written on first use (so a node home needs nothing
 * prepared), a readiness line the launcher can wait for, and a shutdown hook so SIGTERM closes
 * cores and the ZooKeeper session cleanly (a clean stop leaves no Lucene write.lock behind and
 * drops the node from live_nodes at once instead of after the session timeout).
 *
 * <pre>
 * java -cp 'target/classes:target/lib/*' searchsvc.solr.SolrNode --port 8983 --home DIR
 *      --zk 127.0.0.1:9983 [--zk-client-timeout MS]
 * </pre>
 */
public final class SolrNode {
  /** The line printed once the node serves requests; the Python launcher looks for it. */
  static final String READY = "searchsvc-solr-node ready";

  /**
   * Values come from node properties (substituted by Solr when it reads the file), so one home
   * can be restarted on another port or against another ZooKeeper. The host is fixed to
   * 127.0.0.1: Jetty binds there, and the node must register under the address it serves.
   */
  static final String SOLR_XML =
      """
      <?xml version="1.0" encoding="UTF-8" ?>
      <!-- Written by searchsvc.solr.SolrNode; values come from its command line. -->
      <solr>
        <str name="allowPaths">${solr.allowPaths:}</str>
        <shardHandlerFactory name="shardHandlerFactory" class="HttpShardHandlerFactory">
          <int name="socketTimeout">${socketTimeout:90000}</int>
          <int name="connTimeout">${connTimeout:15000}</int>
        </shardHandlerFactory>
        <solrcloud>
          <str name="host">127.0.0.1</str>
          <int name="hostPort">${hostPort}</int>
          <str name="hostContext">${hostContext:solr}</str>
          <str name="zkHost">${zkHost}</str>
          <int name="zkClientTimeout">${zkClientTimeout:30000}</int>
          <bool name="genericCoreNodeNames">true</bool>
          <int name="leaderVoteWait">${leaderVoteWait:10000}</int>
          <int name="distribUpdateConnTimeout">${distribUpdateConnTimeout:45000}</int>
          <int name="distribUpdateSoTimeout">${distribUpdateSoTimeout:340000}</int>
        </solrcloud>
        <metrics enabled="${metricsEnabled:false}"/>
      </solr>
      """;

  private SolrNode() {}

  public static void main(String[] args) throws Exception {
    int port = 8983;
    Path home = null;
    String zkHost = "127.0.0.1:9983";
    int zkClientTimeout = 30000;
    for (int i = 0; i < args.length; i++) {
      String name = args[i];
      if (name.equals("-h") || name.equals("--help")) {
        System.out.println(usage());
        return;
      }
      if (i + 1 >= args.length) {
        fail("missing value for " + name + "\n" + usage());
      }
      String value = args[++i];
      switch (name) {
        case "--port" -> port = parseInt(name, value);
        case "--home" -> home = Paths.get(value).toAbsolutePath().normalize();
        case "--zk" -> zkHost = value;
        case "--zk-client-timeout" -> zkClientTimeout = parseInt(name, value);
        default -> fail("unknown option " + name + "\n" + usage());
      }
    }
    if (home == null) {
      fail("--home is required\n" + usage());
    }
    writeSolrXmlIfMissing(home);

    Properties props = new Properties();
    props.setProperty("zkHost", zkHost);
    props.setProperty("zkClientTimeout", Integer.toString(zkClientTimeout));
    // Also as system properties: some of Solr's code reads them there, not from solr.xml.
    System.setProperty("zkHost", zkHost);
    System.setProperty("zkClientTimeout", Integer.toString(zkClientTimeout));
    System.setProperty("solr.log.dir", home.resolve("logs").toString());

    JettyConfig config =
        JettyConfig.builder()
            .setPort(port)
            .setContext("/solr")
            // A taken port fails at once (the default retries for 60 s).
            .withPortRetryTime(0)
            // Our own hook stops it: Jetty's would race ours and skip closing the cores first.
            .stopAtShutdown(false)
            .build();
    JettySolrRunner runner = new JettySolrRunner(home.toString(), props, config);

    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    if (runner.isRunning()) {
                      runner.stop();
                    }
                    System.out.println("searchsvc-solr-node stopped port=" + runner.getLocalPort(false));
                    System.out.flush();
                  } catch (Exception e) {
                    e.printStackTrace();
                  }
                },
                "searchsvc-solr-node-shutdown"));

    try {
      runner.start();
    } catch (Exception e) {
      System.err.println("searchsvc-solr-node failed to start on port " + port + ": " + e);
      e.printStackTrace();
      Runtime.getRuntime().halt(1);
    }
    if (runner.getCoreContainer() == null || runner.getCoreContainer().isShutDown()) {
      System.err.println(
          "searchsvc-solr-node failed to start on port " + port + ": Solr did not load (see log)");
      Runtime.getRuntime().halt(1);
    }
    System.out.println(
        READY
            + " port="
            + runner.getLocalPort()
            + " node="
            + runner.getNodeName()
            + " home="
            + home);
    System.out.flush();
    // Jetty's threads keep the JVM alive until SIGTERM/SIGINT runs the hook.
    Thread.currentThread().join();
  }

  private static void writeSolrXmlIfMissing(Path home) throws IOException {
    Files.createDirectories(home);
    Path solrXml = home.resolve("solr.xml");
    if (!Files.exists(solrXml)) {
      Files.writeString(solrXml, SOLR_XML, StandardCharsets.UTF_8);
    }
  }

  private static int parseInt(String name, String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      fail(name + " needs a number, not " + value);
      return 0;
    }
  }

  private static String usage() {
    return "usage: SolrNode --port PORT --home DIR --zk HOST:PORT [--zk-client-timeout MS]";
  }

  private static void fail(String message) {
    System.err.println("searchsvc-solr-node: " + message);
    System.exit(2);
  }
}
