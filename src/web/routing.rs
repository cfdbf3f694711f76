//! What the JSON API's and the console's registrations share: routes grouped by their
//! path (actix wants one resource per path, holding the routes of its methods).

/// The values of each key, the keys in the order they first come.
pub fn grouped<K: PartialEq, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Vec<(K, Vec<V>)> {
    let mut groups: Vec<(K, Vec<V>)> = Vec::new();
    for (k, v) in pairs {
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, vs)) => vs.push(v),
            None => groups.push((k, vec![v])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn keys_keep_the_order_they_first_come_in_and_values_theirs() {
        let g = grouped([("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)]);
        assert_eq!(
            g,
            vec![("b", vec![1, 3]), ("a", vec![2, 5]), ("c", vec![4])]
        );
    }
}
