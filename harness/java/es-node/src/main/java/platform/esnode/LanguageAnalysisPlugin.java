package platform.esnode;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.StopwordAnalyzerBase;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.es.SpanishAnalyzer;
import org.apache.lucene.analysis.fr.FrenchAnalyzer;
import org.apache.lucene.analysis.it.ItalianAnalyzer;
import org.apache.lucene.analysis.pt.PortugueseAnalyzer;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.Analysis;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

import java.util.Map;
import java.util.function.BiFunction;

/**
 * The {@code english}, {@code french}, {@code italian}, {@code portuguese} and {@code spanish}
 * analyzers under the names and with the defaults of Elasticsearch's {@code analysis-common}
 * module (stop words, elision, light stemming; {@code stopwords} and {@code stem_exclusion}
 * settings). That module is not published to Maven Central, but the Lucene analyzers it wraps
 * are (lucene-analysis-common, already on the class path), so an index mapping written for a
 * full Elasticsearch cluster works on this node unchanged.
 */
public final class LanguageAnalysisPlugin extends Plugin implements AnalysisPlugin {

    static final String NAME = "platform-language-analysis";

    @Override
    public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
        return Map.of(
            "english", provider(EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, EnglishAnalyzer::new),
            "french", provider(FrenchAnalyzer.getDefaultStopSet(), FrenchAnalyzer::new),
            "italian", provider(ItalianAnalyzer.getDefaultStopSet(), ItalianAnalyzer::new),
            "portuguese", provider(PortugueseAnalyzer.getDefaultStopSet(), PortugueseAnalyzer::new),
            "spanish", provider(SpanishAnalyzer.getDefaultStopSet(), SpanishAnalyzer::new)
        );
    }

    private static AnalysisProvider<AnalyzerProvider<? extends Analyzer>> provider(
        CharArraySet defaultStopWords,
        BiFunction<CharArraySet, CharArraySet, StopwordAnalyzerBase> factory
    ) {
        return (IndexSettings indexSettings, Environment env, String name, Settings settings) -> {
            StopwordAnalyzerBase analyzer = factory.apply(
                Analysis.parseStopWords(env, settings, defaultStopWords),
                Analysis.parseStemExclusion(settings, CharArraySet.EMPTY_SET)
            );
            return new AbstractIndexAnalyzerProvider<StopwordAnalyzerBase>(name) {
                @Override
                public StopwordAnalyzerBase get() {
                    return analyzer;
                }
            };
        };
    }
}
