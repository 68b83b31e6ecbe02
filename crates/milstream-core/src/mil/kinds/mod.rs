//! The model kinds beside the shapelet model: MIORDM (Luan et al.), the box-counting kernel
//! (Tao et al.) and its SVM, and the soft-margin SVM they and MI-SVM / mi-SVM share.

pub mod boxcount;
pub mod boxsvm;
pub mod miordm;
pub mod svm;
