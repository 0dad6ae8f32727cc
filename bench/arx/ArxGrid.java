import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX's k-anonymity grid on one data set, timed the way ARX's published figures are
 * (bench/bench_grid.py): the data and the hierarchies are read once; per configuration
 * one warm-up run of ARXAnonymizer.anonymize(), then `runs` measured runs, the data
 * handle released after every run; the median of the measured runs is reported.
 *
 * Arguments: data.csv (';'-separated, header) hierarchy-prefix (hierarchy of column C in
 * prefix + C + ".csv") quasi-identifiers (comma-separated) runs [metric,k,limit ...]
 *
 * The configurations given as arguments are run once each first, so that the JVM has
 * compiled ARX's code before any configuration is timed; then "ready" is printed and one
 * configuration per line ("metric,k,limit") is read from standard input, answered by one
 * line: metric,k,limit,score,median ms,the levels of the optimum (attribute=level;...),
 * every measured run in ms (';'-separated). An empty line or the end of input stops.
 * Running the grid one configuration at a time lets the caller interleave ARX and
 * deidweb, so that both are measured under the same load.
 */
public class ArxGrid {

    static Metric<?> metric(String name) {
        switch (name) {
            case "loss": return Metric.createLossMetric();
            case "entropy": return Metric.createEntropyMetric();
            case "precision": return Metric.createPrecisionMetric();
            case "discernibility": return Metric.createDiscernabilityMetric();
            default: throw new IllegalArgumentException(name);
        }
    }

    static ARXResult once(Data data, String name, int k, double limit) throws Exception {
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(k));
        config.setSuppressionLimit(limit);
        config.setQualityModel(metric(name));
        return new ARXAnonymizer().anonymize(data, config);
    }

    public static void main(String[] args) throws Exception {
        Data data = Data.create(args[0], StandardCharsets.UTF_8, ';');
        String[] quasi = args[2].split(",");
        for (String q : quasi) {
            data.getDefinition().setAttributeType(q, Hierarchy.create(args[1] + q + ".csv", StandardCharsets.UTF_8, ';'));
        }
        int runs = Integer.parseInt(args[3]);
        for (int i = 4; i < args.length; i++) { // the JVM's warm-up: every configuration once
            String[] c = args[i].split(",");
            once(data, c[0], Integer.parseInt(c[1]), Double.parseDouble(c[2]));
            data.getHandle().release();
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.isBlank()) {
            String[] c = line.trim().split(",");
            int k = Integer.parseInt(c[1]);
            double limit = Double.parseDouble(c[2]);
            double[] ms = new double[runs];
            String score = "";
            StringBuilder levels = new StringBuilder();
            for (int r = -1; r < runs; r++) {
                long start = System.nanoTime();
                ARXResult result = once(data, c[0], k, limit);
                long end = System.nanoTime();
                if (r >= 0) ms[r] = (end - start) / 1e6;
                ARXNode optimum = result.getGlobalOptimum();
                levels.setLength(0);
                if (optimum != null) {
                    score = optimum.getHighestScore().toString();
                    for (String q : quasi) {
                        if (levels.length() > 0) levels.append(';');
                        levels.append(q).append('=').append(optimum.getGeneralization(q));
                    }
                } else {
                    score = "";
                }
                data.getHandle().release();
            }
            StringBuilder all = new StringBuilder();
            for (double v : ms) {
                if (all.length() > 0) all.append(';');
                all.append(String.format(Locale.ROOT, "%.3f", v));
            }
            double[] sorted = ms.clone();
            Arrays.sort(sorted);
            double median = runs % 2 == 1 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
            System.out.println(c[0] + "," + k + "," + limit + "," + score + ","
                + String.format(Locale.ROOT, "%.3f", median) + "," + levels + "," + all);
            System.out.flush();
        }
    }
}
