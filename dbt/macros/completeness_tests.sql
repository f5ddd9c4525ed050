{#-
  Thresholds on marts.data_completeness (the transform DAG's completeness alerts, dags/README.md).
  Each test returns the (day, subject) rows that miss the threshold; the YAML gives the
  threshold from a TIERLENS_COMPLETENESS_* environment variable, which the DAG sets from its
  settings, and the severity: warn for the thresholds, error for the hard floors.
-#}
{% test completeness_share_at_least(model, measure, min_share, grain='cluster') %}
select "day", subject, measure, numerator, denominator, share
from {{ model }}
where measure = '{{ measure }}'
  and grain = '{{ grain }}'
  and denominator > 0
  and share < {{ min_share | float }}
{% endtest %}

{% test completeness_count_at_most(model, measure, max_count) %}
select "day", subject, measure, numerator
from {{ model }}
where measure = '{{ measure }}'
  and numerator > {{ max_count | float }}
{% endtest %}
