"""Human baseline studies: study files, participants' queues, summaries, scrubbing."""
