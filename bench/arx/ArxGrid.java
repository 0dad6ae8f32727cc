import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX's k-anonymity grid on one data set: for each metric, k and suppression limit, the
 * score of ARX's optimum and the median wall time of ARXAnonymizer.anonymize() over
 * `runs` runs after one warm-up run; the whole grid is run once first, so that the
 * JVM has compiled ARX's code before any configuration is timed.
 *
 * Arguments: data.csv (';'-separated, header) hierarchy-prefix (hierarchy of column C
 * in prefix + C + ".csv") quasi-identifiers (comma-separated) runs [metric,k,limit ...]
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

    public static void main(String[] args) throws Exception {
        Data data = Data.create(args[0], StandardCharsets.UTF_8, ';');
        for (String q : args[2].split(",")) {
            data.getDefinition().setAttributeType(q, Hierarchy.create(args[1] + q + ".csv", StandardCharsets.UTF_8, ';'));
        }
        int runs = Integer.parseInt(args[3]);
        for (int i = 4; i < args.length; i++) { // the JVM's warm-up: every configuration once
            String[] c = args[i].split(",");
            ARXConfiguration config = ARXConfiguration.create();
            config.addPrivacyModel(new KAnonymity(Integer.parseInt(c[1])));
            config.setSuppressionLimit(Double.parseDouble(c[2]));
            config.setQualityModel(metric(c[0]));
            new ARXAnonymizer().anonymize(data, config);
            data.getHandle().release();
        }
        System.out.println("metric,k,suppression_limit,arx_information_loss,arx_anonymize_ms_median");
        for (int i = 4; i < args.length; i++) {
            String[] c = args[i].split(",");
            int k = Integer.parseInt(c[1]);
            double limit = Double.parseDouble(c[2]);
            double[] ms = new double[runs];
            String score = "";
            for (int r = -1; r < runs; r++) {
                ARXConfiguration config = ARXConfiguration.create();
                config.addPrivacyModel(new KAnonymity(k));
                config.setSuppressionLimit(limit);
                config.setQualityModel(metric(c[0]));
                long start = System.nanoTime();
                ARXResult result = new ARXAnonymizer().anonymize(data, config);
                long end = System.nanoTime();
                if (r >= 0) ms[r] = (end - start) / 1e6;
                score = result.getGlobalOptimum() == null ? "" : result.getGlobalOptimum().getHighestScore().toString();
                data.getHandle().release();
            }
            Arrays.sort(ms);
            double median = runs % 2 == 1 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2;
            System.out.println(c[0] + "," + k + "," + limit + "," + score + "," + median);
        }
    }
}
