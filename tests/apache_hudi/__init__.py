"""Apache Hudi (the Java reference implementation on Spark 3.5) as a writer and reader for the tests."""
